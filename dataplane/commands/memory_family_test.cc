// The memory cap at the command level (OOM replies, eviction by class), MEMORY and the INFO
// fields that report memory and key classes.
#include <gtest/gtest.h>

#include "dataplane/commands/fake_services.h"
#include "dataplane/commands/memory_guard.h"
#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

const std::string kOom = resp::Err(kOomError);

class MemoryFamilyTest : public CommandFixture {
 protected:
  MemoryFamilyTest()
      : CommandFixture(2, {ServerCommands(), ConnectionCommands(), StringCommands(), KeyCommands(),
                           CounterCommands(), LockCommands()}) {
    set_services(&services_);
    core::KeyClassTable classes;
    std::string error;
    EXPECT_TRUE(core::KeyClassTable::Build(
        {{"ledger", "l", "none"}, {"config", "c", "pinned"}, {"session", "s", "ttl"}}, &classes,
        &error))
        << error;
    for (int i = 0; i < shard_count(); ++i) store(i).SetKeyClasses(classes);
  }

  // Puts every shard over its cap by `over` bytes.
  void CapAtCurrentUse(int64_t over = 1) {
    for (int i = 0; i < shard_count(); ++i) {
      store(i).SetMemoryLimit(store(i).AllocatedBytes() - static_cast<size_t>(over));
    }
  }

  FakeServices services_;
};

TEST_F(MemoryFamilyTest, NoneClassAnswersOomForWritesOnly) {
  ASSERT_EQ(Run({"SET", "l:1", "v"}), resp::kOk);
  ASSERT_EQ(Run({"SET", "u:1", "v"}), resp::kOk);
  CapAtCurrentUse();
  EXPECT_EQ(Run({"SET", "l:2", "v"}), kOom);
  EXPECT_EQ(Run({"SET", "l:1", "w"}), kOom);
  EXPECT_EQ(Run({"APPEND", "l:1", "w"}), kOom);
  EXPECT_EQ(Run({"INCR", "l:n"}), kOom);
  EXPECT_EQ(Run({"SETNX", "l:3", "v"}), kOom);
  EXPECT_EQ(Run({"MSET", "l:4", "v", "u:4", "v"}), kOom);
  // Reads, DEL and writes that are not denyoom still work.
  EXPECT_EQ(Run({"GET", "l:1"}), resp::Bulk("v"));
  EXPECT_EQ(Run({"EXPIRE", "l:1", "100"}), resp::Int(1));
  EXPECT_EQ(Run({"DEL", "l:1"}), resp::Int(1));
  EXPECT_EQ(Run({"EXISTS", "l:1"}), resp::Int(0));
  // Under the cap again, writes go through.
  for (int i = 0; i < shard_count(); ++i) store(i).SetMemoryLimit(0);
  EXPECT_EQ(Run({"SET", "l:2", "v"}), resp::kOk);
}

TEST_F(MemoryFamilyTest, LruClassEvictsInsteadOfRefusing) {
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(Run({"SET", "u:" + std::to_string(i), "v"}), resp::kOk);
  CapAtCurrentUse(4096);
  EXPECT_EQ(Run({"SET", "u:new", "v"}), resp::kOk);
  uint64_t evicted = store(0).evicted_keys() + store(1).evicted_keys();
  EXPECT_GT(evicted, 0u);
  EXPECT_EQ(Run({"GET", "u:new"}), resp::Bulk("v"));
}

TEST_F(MemoryFamilyTest, OnlyPinnedDataLeftMeansOom) {
  for (int i = 0; i < 200; ++i) ASSERT_EQ(Run({"SET", "c:" + std::to_string(i), "v"}), resp::kOk);
  ASSERT_EQ(Run({"LOCK", "u:lock", "owner", "10000"}).substr(0, 1), ":");
  CapAtCurrentUse();
  // Pinned keys and the lock cannot go, so a write of an lru key is refused.
  EXPECT_EQ(Run({"SET", "u:1", "v"}), kOom);
  EXPECT_EQ(Run({"SET", "c:new", "v"}), kOom);
  EXPECT_EQ(Run({"GET", "c:1"}), resp::Bulk("v"));
  EXPECT_NE(Run({"LOCKINFO", "u:lock"}), resp::kNil);
}

TEST_F(MemoryFamilyTest, MemoryUsage) {
  ASSERT_EQ(Run({"SET", "k", "hello"}), resp::kOk);
  const std::string usage = Run({"MEMORY", "USAGE", "k"});
  ASSERT_EQ(usage[0], ':') << usage;
  const int64_t small = std::stoll(usage.substr(1));
  EXPECT_GT(small, 5);
  EXPECT_LT(small, 64);
  ASSERT_EQ(Run({"SET", "big", std::string(10000, 'x')}), resp::kOk);
  const std::string big = Run({"memory", "usage", "big", "SAMPLES", "0"});
  EXPECT_GT(std::stoll(big.substr(1)), 10000) << big;
  EXPECT_EQ(Run({"MEMORY", "USAGE", "missing"}), resp::kNil);
  EXPECT_EQ(RunResp3({"MEMORY", "USAGE", "missing"}), resp::kNull3);
  EXPECT_EQ(Run({"MEMORY", "USAGE"}),
            resp::Err("ERR wrong number of arguments for 'memory|usage' command"));
  EXPECT_EQ(Run({"MEMORY"}), resp::Err("ERR wrong number of arguments for 'memory' command"));
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "SAMPLES"}), resp::Err("ERR syntax error"));
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "SAMPLES", "x"}),
            resp::Err("ERR value is not an integer or out of range"));
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "SAMPLES", "-1"}), resp::Err("ERR syntax error"));
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "bogus"}), resp::Err("ERR syntax error"));
  EXPECT_EQ(Run({"MEMORY", "NOPE"}), resp::Err("ERR unknown subcommand 'NOPE'. Try MEMORY HELP."));
  EXPECT_EQ(Run({"MEMORY", "USAGE", std::string("\x00\xff", 2)}), resp::kNil);
  EXPECT_TRUE(Run({"MEMORY", "HELP"}).starts_with("*"));
}

TEST_F(MemoryFamilyTest, MemoryStatsIsAMap) {
  services_.stats_.keys = 10;
  services_.stats_.used_bytes = 1000;
  services_.stats_.class_keys[2] = 3;
  const std::string stats = RunResp3({"MEMORY", "STATS"});
  EXPECT_TRUE(stats.starts_with("%13\r\n")) << stats;  // 9 fields and 4 classes
  EXPECT_NE(stats.find("$10\r\nkeys.count\r\n:20\r\n"), std::string::npos) << stats;
  EXPECT_NE(stats.find("$12\r\nclass.config\r\n%5\r\n$6\r\npolicy\r\n$6\r\npinned\r\n"
                       "$4\r\nkeys\r\n:6\r\n"),
            std::string::npos)
      << stats;
  EXPECT_EQ(Run({"MEMORY", "STATS", "x"}),
            resp::Err("ERR wrong number of arguments for 'memory|stats' command"));
}

TEST_F(MemoryFamilyTest, InfoReportsMemoryEvictionAndClasses) {
  services_.stats_.used_bytes = 3 << 20;
  services_.stats_.maxmemory = 64 << 20;
  services_.stats_.evicted_keys = 7;
  services_.stats_.class_keys[3] = 4;
  services_.stats_.class_evicted[3] = 1;
  const std::string memory = Run({"INFO", "memory"});
  EXPECT_NE(memory.find("used_memory:6291456\r\nused_memory_human:6.00M\r\n"), std::string::npos)
      << memory;
  EXPECT_NE(memory.find("\r\nused_memory_rss:"), std::string::npos);
  // The cap is the member's: every shard reports it, it is not summed.
  EXPECT_NE(memory.find("maxmemory:67108864\r\nmaxmemory_human:64.00M\r\n"), std::string::npos);
  EXPECT_NE(memory.find("maxmemory_policy:allkeys-lru\r\n"), std::string::npos);
  EXPECT_NE(Run({"INFO", "stats"}).find("evicted_keys:14\r\n"), std::string::npos);
  const std::string keyspace = Run({"INFO", "keyspace"});
  EXPECT_NE(
      keyspace.find("# Keyclasses\r\n"
                    "class_default:policy=lru,keys=0,bytes=0,evicted_keys=0,expired_keys=0\r\n"
                    "class_ledger:policy=none,keys=0,bytes=0,evicted_keys=0,expired_keys=0\r\n"
                    "class_config:policy=pinned,keys=0,bytes=0,evicted_keys=0,"
                    "expired_keys=0\r\n"
                    "class_session:policy=ttl,keys=8,bytes=0,evicted_keys=2,expired_keys=0"
                    "\r\n"),
      std::string::npos)
      << keyspace;
}

TEST(MemoryValueTest, ParsesRedisUnits) {
  EXPECT_EQ(ParseMemoryValue("0"), 0);
  EXPECT_EQ(ParseMemoryValue("100"), 100);
  EXPECT_EQ(ParseMemoryValue("64mb"), 64 << 20);
  EXPECT_EQ(ParseMemoryValue("64MB"), 64 << 20);
  EXPECT_EQ(ParseMemoryValue("1gb"), int64_t{1} << 30);
  EXPECT_EQ(ParseMemoryValue("5k"), 5000);
  EXPECT_EQ(ParseMemoryValue("5kb"), 5120);
  EXPECT_EQ(ParseMemoryValue("1b"), 1);
  for (const char* bad : {"", "-1", "mb", "1tb", "1 mb", "99999999999999999999"}) {
    EXPECT_FALSE(ParseMemoryValue(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace keep::commands
