#include "dataplane/commands/plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

class PlanTest : public ::testing::Test {
 protected:
  PlanTest() : slot_of_(core::SlotHash::kCrc16, "") {
    table_.Add(StringCommands());
    table_.Add(CounterCommands());
    table_.Add(KeyCommands());
  }

  const RoutePlan& Plan(std::vector<std::string_view> args, int shards = 2) {
    PlanRequest(table_, args, slot_of_, shards, &plan_);
    return plan_;
  }

  int ShardOf(std::string_view key, int shards = 2) { return ShardOfSlot(slot_of_(key), shards); }

  CommandTable table_;
  core::SlotFunction slot_of_;
  RoutePlan plan_;
};

TEST_F(PlanTest, UnknownCommandText) {
  EXPECT_EQ(Plan({"foo", "a", "b"}).error,
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' ");
  EXPECT_EQ(plan_.spec, nullptr);
  EXPECT_EQ(Plan({"FOO"}).error, "ERR unknown command 'FOO', with args beginning with: ");
  // Names are case-insensitive; unknown ones are echoed as sent.
  EXPECT_EQ(Plan({"GeT", "k"}).error, "");
  EXPECT_EQ(plan_.spec->name, "get");
}

TEST_F(PlanTest, UnknownCommandTruncatesAndSanitizes) {
  std::string long_name(200, 'x');
  std::string expected =
      "ERR unknown command '" + std::string(128, 'x') + "', with args beginning with: ";
  EXPECT_EQ(Plan({long_name}).error, expected);
  // Arguments are listed until 128 bytes of them have been written.
  std::string long_arg(150, 'a');
  EXPECT_EQ(
      Plan({"nope", long_arg, "next"}).error,
      "ERR unknown command 'nope', with args beginning with: '" + std::string(128, 'a') + "' ");
  EXPECT_EQ(Plan({"nope", "line\r\nbreak"}).error,
            "ERR unknown command 'nope', with args beginning with: 'line  break' ");
}

class PlanThroughFixtureTest : public CommandFixture {};

TEST_F(PlanThroughFixtureTest, ErrorReplyBytes) {
  EXPECT_EQ(Run({"foo", "a", "b"}),
            "-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n");
  EXPECT_EQ(Run({"nosuch"}), "-ERR unknown command 'nosuch', with args beginning with: \r\n");
  EXPECT_EQ(Run({"GET"}), "-ERR wrong number of arguments for 'get' command\r\n");
  EXPECT_EQ(Run({"RENAME", "a", "b"}),
            "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  EXPECT_EQ(Run({}), "");
}

TEST_F(PlanTest, Arity) {
  EXPECT_EQ(Plan({"get"}).error, "ERR wrong number of arguments for 'get' command");
  EXPECT_EQ(Plan({"GET", "a", "b"}).error, "ERR wrong number of arguments for 'get' command");
  EXPECT_EQ(Plan({"SET", "a"}).error, "ERR wrong number of arguments for 'set' command");
  EXPECT_EQ(Plan({"SET", "a", "b", "NX", "GET"}).error, "");
  EXPECT_EQ(Plan({"MGET"}).error, "ERR wrong number of arguments for 'mget' command");
  EXPECT_EQ(Plan({"RANDOMKEY", "x"}).error,
            "ERR wrong number of arguments for 'randomkey' command");
  // MSET's pairs are checked while splitting.
  EXPECT_EQ(Plan({"MSET", "a", "1", "b"}).error,
            "ERR wrong number of arguments for 'mset' command");
  EXPECT_EQ(Plan({"MSET", "a", "1", "b", "2"}).error, "");
}

TEST_F(PlanTest, SingleKeyRouting) {
  const RoutePlan& plan = Plan({"GET", "user:1"});
  EXPECT_EQ(plan.routing, Routing::kSingleKey);
  EXPECT_EQ(plan.shard, ShardOf("user:1"));
  // CRC16("123456789") = 0x31C3 = 12739, an odd slot: shard 1 of 2, shard 4 of 5.
  EXPECT_EQ(Plan({"GET", "123456789"}).shard, 1);
  EXPECT_EQ(Plan({"GET", "123456789"}, 5).shard, 12739 % 5);
}

TEST_F(PlanTest, SlotOnlyWhenSomethingDependsOnIt) {
  // One shard, one key, no cluster: nothing routes on the slot, so it is not computed.
  EXPECT_EQ(Plan({"GET", "123456789"}, 1).error, "");
  EXPECT_EQ(plan_.shard, 0);
  EXPECT_EQ(plan_.slot, kNoSlot);
  // A cluster member checks that it serves the slot.
  std::vector<std::string_view> get = {"GET", "123456789"};
  PlanRequest(table_, get, slot_of_, 1, &plan_, kNoSlot, /*want_slot=*/true);
  EXPECT_EQ(plan_.slot, 12739u);
  // Several shards route on it; several keys are checked against one another even on one shard.
  EXPECT_EQ(Plan({"GET", "123456789"}, 2).slot, 12739u);
  EXPECT_EQ(Plan({"RENAME", "a", "b"}, 1).error,
            "CROSSSLOT Keys in request don't hash to the same slot");
  EXPECT_EQ(Plan({"RENAME", "{123456789}a", "{123456789}b"}, 1).slot, 12739u);
}

TEST_F(PlanTest, CrossSlot) {
  const std::string cross = "CROSSSLOT Keys in request don't hash to the same slot";
  EXPECT_EQ(Plan({"RENAME", "a", "b"}).error, cross);
  EXPECT_EQ(Plan({"RENAMENX", "a", "b"}).error, cross);
  EXPECT_EQ(Plan({"COPY", "a", "b", "REPLACE"}).error, cross);
  EXPECT_EQ(Plan({"MSETNX", "a", "1", "b", "2"}).error, cross);
  EXPECT_EQ(Plan({"MSETNX", "{x}a", "1", "{x}b", "2", "c", "3"}).error, cross);
  // Hash tags put keys in one slot; values and options are not keys.
  EXPECT_EQ(Plan({"RENAME", "{user1}.a", "{user1}.b"}).error, "");
  EXPECT_EQ(plan_.shard, ShardOf("user1"));
  EXPECT_EQ(Plan({"COPY", "{t}a", "{t}b", "DB", "0"}).error, "");
  EXPECT_EQ(Plan({"MSETNX", "{t}a", "x", "{t}b", "y"}).error, "");
  EXPECT_EQ(Plan({"SET", "a", "b"}).error, "");
}

TEST_F(PlanTest, EachKeySplitsByShard) {
  std::vector<std::string_view> keys = {"a", "b", "c", "d", "e", "f"};
  std::vector<std::string_view> args = {"MGET"};
  args.insert(args.end(), keys.begin(), keys.end());
  const RoutePlan& plan = Plan(args);
  EXPECT_EQ(plan.routing, Routing::kEachKey);
  ASSERT_EQ(plan.key_arg.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(plan.key_arg[i], i + 1);
    EXPECT_EQ(plan.key_shard[i], ShardOf(keys[i]));
  }
  const RoutePlan& mset = Plan({"MSET", "a", "1", "b", "2"});
  ASSERT_EQ(mset.key_arg.size(), 2u);
  EXPECT_EQ(mset.key_arg[0], 1u);
  EXPECT_EQ(mset.key_arg[1], 3u);
  EXPECT_EQ(mset.key_shard[1], ShardOf("b"));
}

TEST_F(PlanTest, BroadcastCommands) {
  EXPECT_EQ(Plan({"DBSIZE"}).routing, Routing::kAllShards);
  EXPECT_EQ(Plan({"KEYS", "*"}).routing, Routing::kAllShards);
  EXPECT_EQ(Plan({"FLUSHALL", "ASYNC"}).routing, Routing::kAllShards);
  EXPECT_EQ(Plan({"DELPREFIX", "p"}).routing, Routing::kAllShards);
  EXPECT_EQ(Plan({"RANDOMKEY"}).routing, Routing::kAllShards);
}

TEST_F(PlanTest, ScanCursorEncoding) {
  EXPECT_EQ(EncodeScanCursor(0, 0, 2), 0u);
  EXPECT_EQ(EncodeScanCursor(5, 1, 2), 11u);
  EXPECT_EQ(EncodeScanCursor(7, 3, 4), 31u);
  // A shard that is not done continues; a done one hands over to the next; the last ends.
  EXPECT_EQ(NextScanCursor(5, 0, 2), 10u);
  EXPECT_EQ(NextScanCursor(0, 0, 2), 1u);
  EXPECT_EQ(NextScanCursor(0, 1, 2), 0u);
  EXPECT_EQ(NextScanCursor(3, 2, 3), 11u);
  EXPECT_EQ(NextScanCursor(0, 0, 1), 0u);

  const RoutePlan& plan = Plan({"SCAN", "11"});
  EXPECT_EQ(plan.routing, Routing::kCursorShard);
  EXPECT_EQ(plan.shard, 1);
  EXPECT_EQ(plan.cursor_position, 5u);
  EXPECT_EQ(Plan({"SCAN", "31", "COUNT", "5"}, 4).shard, 3);
  EXPECT_EQ(plan_.cursor_position, 7u);
  EXPECT_EQ(Plan({"SCAN", "0"}).shard, 0);
  EXPECT_EQ(plan_.cursor_position, 0u);
  EXPECT_EQ(Plan({"SCAN", "18446744073709551615"}).shard, 1);
  EXPECT_EQ(plan_.cursor_position, 9223372036854775807u);
}

TEST_F(PlanTest, ScanInvalidCursor) {
  EXPECT_EQ(Plan({"SCAN", "abc"}).error, "ERR invalid cursor");
  EXPECT_EQ(Plan({"SCAN", "1x"}).error, "ERR invalid cursor");
  EXPECT_EQ(Plan({"SCAN", " 1"}).error, "ERR invalid cursor");
  EXPECT_EQ(Plan({"SCAN", "18446744073709551616"}).error, "ERR invalid cursor");
  // strtoul's leniencies, which Redis inherits.
  EXPECT_EQ(Plan({"SCAN", ""}).error, "");
  EXPECT_EQ(plan_.cursor_position, 0u);
  EXPECT_EQ(Plan({"SCAN", "+5"}).error, "");
  EXPECT_EQ(plan_.shard, 1);
  EXPECT_EQ(Plan({"SCAN", "-1"}).error, "");
}

TEST_F(PlanTest, SpecsAreConsistent) {
  for (const CommandSpec* spec : table_.all()) {
    SCOPED_TRACE(std::string(spec->name));
    EXPECT_EQ(table_.Find(spec->name), spec);
    EXPECT_NE(spec->handler, nullptr);
    bool split = spec->routing == Routing::kEachKey || spec->routing == Routing::kAllShards ||
                 spec->routing == Routing::kCursorShard;
    EXPECT_EQ(spec->combine != nullptr, split);
    bool keyed = spec->routing == Routing::kSingleKey || spec->routing == Routing::kEachKey;
    EXPECT_EQ(spec->first_key > 0, keyed);
    EXPECT_NE(spec->flags & (kWrite | kReadOnly), 0u);
    EXPECT_FALSE(spec->summary.empty());
    EXPECT_FALSE(spec->acl_categories.empty());
    EXPECT_TRUE(spec->group == "string" || spec->group == "generic" || spec->group == "server");
    // The fast flag and @fast/@slow agree, as Redis derives one from the other.
    bool fast = (spec->flags & kFast) != 0;
    EXPECT_EQ(spec->acl_categories.find("@fast") != std::string_view::npos, fast);
    EXPECT_EQ(spec->acl_categories.find("@slow") != std::string_view::npos, !fast);
    bool write = (spec->flags & kWrite) != 0;
    EXPECT_EQ(spec->acl_categories.find("@write") != std::string_view::npos, write);
    EXPECT_EQ(spec->acl_categories.find("@read") != std::string_view::npos, !write);
  }
  EXPECT_EQ(table_.all().size(), 46u);
}

}  // namespace
}  // namespace keep::commands
