#include <string>
#include <vector>

#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

using resp::Array;
using resp::Bulk;
using resp::Err;
using resp::Int;
using resp::kNil;
using resp::kNull3;
using resp::kOk;

const std::string kWrongType =
    Err("WRONGTYPE Operation against a key holding the wrong kind of value");

class LockFamilyTest : public CommandFixture {
 protected:
  LockFamilyTest()
      : CommandFixture(2, {StringCommands(), CounterCommands(), KeyCommands(), LockCommands()}) {}

  // RESP2 LOCKINFO reply.
  static std::string Info(std::string_view owner, int64_t token, int64_t ttl_ms) {
    return Array(
        {Bulk("owner"), Bulk(owner), Bulk("token"), Int(token), Bulk("ttl_ms"), Int(ttl_ms)});
  }

  core::SlotState& SlotOf(const std::string& key) {
    Run({"LOCKINFO", key});
    return slot_table(ShardOf(key))[last_plan().slot];
  }
};

TEST_F(LockFamilyTest, LockReturnsTokenAndRefusesOtherOwners) {
  EXPECT_EQ(Run({"LOCK", "res", "alice", "10000"}), Int(1));
  EXPECT_EQ(Run({"LOCK", "res", "bob", "10000"}), kNil);
  EXPECT_EQ(RunResp3({"LOCK", "res", "bob", "10000"}), kNull3);
  EXPECT_EQ(Run({"LOCKINFO", "res"}), Info("alice", 1, 10000));
  EXPECT_EQ(Run({"PTTL", "res"}), Int(10000));
  EXPECT_EQ(Run({"EXISTS", "res"}), Int(1));
}

TEST_F(LockFamilyTest, RelockBySameOwnerRenewsLeaseAndKeepsToken) {
  EXPECT_EQ(Run({"LOCK", "res", "alice", "1000"}), Int(1));
  AdvanceTime(600);
  EXPECT_EQ(Run({"LOCK", "res", "alice", "5000"}), Int(1));
  EXPECT_EQ(Run({"LOCKINFO", "res"}), Info("alice", 1, 5000));
  // A shorter TTL shortens the lease: the lease is always "ttl-ms from now".
  EXPECT_EQ(Run({"LOCK", "res", "alice", "100"}), Int(1));
  EXPECT_EQ(Run({"PTTL", "res"}), Int(100));
}

TEST_F(LockFamilyTest, TokensGrowPerSlotAcrossKeysAndExpiry) {
  // Keys with one hash tag share a slot, so they share one counter.
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) keys.push_back("{orders}:" + std::to_string(i));
  int64_t expected = 0;
  for (const std::string& key : keys) {
    EXPECT_EQ(Run({"LOCK", key, "w", "1000"}), Int(++expected)) << key;
  }
  EXPECT_EQ(SlotOf(keys[0]).fencing_token, 50u);
  // Unlock, expiry and re-lock never reuse a token.
  EXPECT_EQ(Run({"UNLOCK", keys[0], "w"}), Int(1));
  EXPECT_EQ(Run({"LOCK", keys[0], "w", "1000"}), Int(++expected));
  AdvanceTime(1000);
  for (const std::string& key : keys) {
    EXPECT_EQ(Run({"LOCK", key, "v", "1000"}), Int(++expected)) << key;
  }
  EXPECT_EQ(Run({"DEL", keys[1]}), Int(1));
  EXPECT_EQ(Run({"LOCK", keys[1], "v", "1000"}), Int(++expected));
  // Another slot has its own counter.
  EXPECT_EQ(Run({"LOCK", "{users}:1", "w", "1000"}), Int(1));
  EXPECT_EQ(Run({"LOCK", "{users}:2", "w", "1000"}), Int(2));
}

TEST_F(LockFamilyTest, TokenContinuesFromSlotCounter) {
  // A handed-over slot arrives with its counter; LOCK continues from it.
  SlotOf("job").fencing_token = 41;
  EXPECT_EQ(Run({"LOCK", "job", "a", "1000"}), Int(42));
  EXPECT_EQ(SlotOf("job").fencing_token, 42u);
}

TEST_F(LockFamilyTest, UnlockNeedsTheOwner) {
  EXPECT_EQ(Run({"UNLOCK", "res", "alice"}), Int(0));
  EXPECT_EQ(Run({"LOCK", "res", "alice", "1000"}), Int(1));
  EXPECT_EQ(Run({"UNLOCK", "res", "bob"}), Int(0));
  EXPECT_EQ(Run({"UNLOCK", "res", "Alice"}), Int(0));
  EXPECT_EQ(Run({"UNLOCK", "res", std::string("alice\0", 6)}), Int(0));
  EXPECT_EQ(Run({"LOCKINFO", "res"}), Info("alice", 1, 1000));
  EXPECT_EQ(Run({"UNLOCK", "res", "alice"}), Int(1));
  EXPECT_EQ(Run({"UNLOCK", "res", "alice"}), Int(0));
  EXPECT_EQ(Run({"LOCKINFO", "res"}), kNil);
  EXPECT_EQ(Run({"EXISTS", "res"}), Int(0));
  EXPECT_EQ(Run({"LOCK", "res", "bob", "1000"}), Int(2));
}

TEST_F(LockFamilyTest, ExpiryFreesTheLock) {
  EXPECT_EQ(Run({"LOCK", "res", "alice", "1000"}), Int(1));
  AdvanceTime(999);
  EXPECT_EQ(Run({"LOCK", "res", "bob", "1000"}), kNil);
  EXPECT_EQ(Run({"LOCKINFO", "res"}), Info("alice", 1, 1));
  AdvanceTime(1);  // the deadline itself is past (as every key's)
  EXPECT_EQ(Run({"LOCKINFO", "res"}), kNil);
  EXPECT_EQ(Run({"UNLOCK", "res", "alice"}), Int(0));
  EXPECT_EQ(Run({"LOCKEXTEND", "res", "alice", "1000"}), Int(0));
  EXPECT_EQ(Run({"LOCK", "res", "bob", "1000"}), Int(2));
}

TEST_F(LockFamilyTest, LockExtend) {
  EXPECT_EQ(Run({"LOCKEXTEND", "res", "alice", "1000"}), Int(0));
  EXPECT_EQ(Run({"EXISTS", "res"}), Int(0));
  EXPECT_EQ(Run({"LOCK", "res", "alice", "1000"}), Int(1));
  AdvanceTime(900);
  EXPECT_EQ(Run({"LOCKEXTEND", "res", "bob", "5000"}), Int(0));
  EXPECT_EQ(Run({"PTTL", "res"}), Int(100));
  EXPECT_EQ(Run({"LOCKEXTEND", "res", "alice", "5000"}), Int(1));
  EXPECT_EQ(Run({"LOCKINFO", "res"}), Info("alice", 1, 5000));
  AdvanceTime(4999);
  EXPECT_EQ(Run({"LOCK", "res", "bob", "1000"}), kNil);
}

TEST_F(LockFamilyTest, QuarantineAnswersTryAgainThenGrants) {
  core::SlotState& slot = SlotOf("res");
  slot.lock_quarantine_until_ms = now_ms() + 500;
  EXPECT_EQ(Run({"LOCK", "res", "alice", "1000"}),
            Err("TRYAGAIN lock quarantine in effect for this slot, retry in 500 ms"));
  AdvanceTime(499);
  EXPECT_EQ(Run({"LOCK", "res", "alice", "1000"}),
            Err("TRYAGAIN lock quarantine in effect for this slot, retry in 1 ms"));
  EXPECT_EQ(Run({"EXISTS", "res"}), Int(0));
  // The quarantine is per slot: other slots grant.
  EXPECT_EQ(Run({"LOCK", "other", "alice", "1000"}), Int(1));
  // Nothing else is refused meanwhile.
  EXPECT_EQ(Run({"UNLOCK", "res", "alice"}), Int(0));
  EXPECT_EQ(Run({"LOCKINFO", "res"}), kNil);
  AdvanceTime(1);
  EXPECT_EQ(Run({"LOCK", "res", "alice", "1000"}), Int(1));
  // Bad arguments are reported before the quarantine.
  slot.lock_quarantine_until_ms = now_ms() + 500;
  EXPECT_EQ(Run({"LOCK", "res", "alice", "0"}), Err("ERR invalid expire time in 'lock' command"));
}

TEST_F(LockFamilyTest, LockInfoResp3IsAMap) {
  EXPECT_EQ(RunResp3({"LOCKINFO", "res"}), kNull3);
  EXPECT_EQ(Run({"LOCK", "res", "alice", "2500"}), Int(1));
  AdvanceTime(500);
  EXPECT_EQ(RunResp3({"LOCKINFO", "res"}), "%3\r\n" + Bulk("owner") + Bulk("alice") +
                                               Bulk("token") + Int(1) + Bulk("ttl_ms") + Int(2000));
}

TEST_F(LockFamilyTest, BinaryKeysAndOwners) {
  const std::string key("k\xff\x00\r\n", 5);
  const std::string owner("\x00\xfe\xff\r\nowner", 10);
  EXPECT_EQ(Run({"LOCK", key, owner, "1000"}), Int(1));
  EXPECT_EQ(Run({"LOCK", key, std::string("\x00\xfe\xff\r\n", 5), "1000"}), kNil);
  EXPECT_EQ(Run({"LOCKINFO", key}), Info(owner, 1, 1000));
  EXPECT_EQ(Run({"LOCKEXTEND", key, owner, "2000"}), Int(1));
  EXPECT_EQ(Run({"UNLOCK", key, owner}), Int(1));
  // Empty and long owners (a long one does not fit the stack buffer).
  EXPECT_EQ(Run({"LOCK", "e", "", "1000"}), Int(1));
  EXPECT_EQ(Run({"UNLOCK", "e", "x"}), Int(0));
  EXPECT_EQ(Run({"LOCKINFO", "e"}), Info("", 1, 1000));
  EXPECT_EQ(Run({"UNLOCK", "e", ""}), Int(1));
  const std::string big(5000, 'o');
  EXPECT_EQ(Run({"LOCK", "big", big, "1000"}), Int(1));
  EXPECT_EQ(Run({"LOCKINFO", "big"}), Info(big, 1, 1000));
  EXPECT_EQ(Run({"UNLOCK", "big", big.substr(1)}), Int(0));
  EXPECT_EQ(Run({"UNLOCK", "big", big}), Int(1));
  // A numeric owner stays bytes.
  EXPECT_EQ(Run({"LOCK", "{n}", "12345", "1000"}), Int(1));
  EXPECT_EQ(Run({"LOCKINFO", "{n}"}), Info("12345", 1, 1000));
}

TEST_F(LockFamilyTest, WrongArity) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"LOCK"}, {"LOCK", "k"}, {"LOCK", "k", "o"}, {"LOCK", "k", "o", "1", "x"}}) {
    EXPECT_EQ(Run(args), Err("ERR wrong number of arguments for 'lock' command"));
  }
  for (auto args : std::vector<std::vector<std::string>>{
           {"UNLOCK"}, {"UNLOCK", "k"}, {"UNLOCK", "k", "o", "x"}}) {
    EXPECT_EQ(Run(args), Err("ERR wrong number of arguments for 'unlock' command"));
  }
  for (auto args : std::vector<std::vector<std::string>>{{"LOCKEXTEND", "k", "o"},
                                                         {"LOCKEXTEND", "k", "o", "1", "2"}}) {
    EXPECT_EQ(Run(args), Err("ERR wrong number of arguments for 'lockextend' command"));
  }
  for (auto args : std::vector<std::vector<std::string>>{{"LOCKINFO"}, {"LOCKINFO", "a", "b"}}) {
    EXPECT_EQ(Run(args), Err("ERR wrong number of arguments for 'lockinfo' command"));
  }
  EXPECT_EQ(Run({"lock", "k", "o", "1000"}), Int(1));  // any case
}

TEST_F(LockFamilyTest, BadTtls) {
  for (std::string ttl : {"0", "-1", "abc", "1.5", "", " 10", "10 ", "+10", "010", "1e3",
                          "9223372036854775808", "-9223372036854775808"}) {
    EXPECT_EQ(Run({"LOCK", "k", "o", ttl}), Err("ERR invalid expire time in 'lock' command"))
        << ttl;
    EXPECT_EQ(Run({"LOCKEXTEND", "k", "o", ttl}),
              Err("ERR invalid expire time in 'lockextend' command"))
        << ttl;
  }
  for (std::string ttl : {"60001", "9223372036854775807", "100000000000"}) {
    EXPECT_EQ(Run({"LOCK", "k", "o", ttl}), Err("ERR lock ttl exceeds max-lock-ttl (60000 ms)"));
    EXPECT_EQ(Run({"LOCKEXTEND", "k", "o", ttl}),
              Err("ERR lock ttl exceeds max-lock-ttl (60000 ms)"));
  }
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(Run({"LOCK", "k", "o", "60000"}), Int(1));
  EXPECT_EQ(Run({"LOCKEXTEND", "k", "o", "60000"}), Int(1));
  // A held lock is not touched by a refused extension.
  EXPECT_EQ(Run({"LOCKEXTEND", "k", "o", "60001"}),
            Err("ERR lock ttl exceeds max-lock-ttl (60000 ms)"));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(60000));
  limits().max_lock_ttl_ms = 1500;
  EXPECT_EQ(Run({"LOCK", "k2", "o", "1501"}), Err("ERR lock ttl exceeds max-lock-ttl (1500 ms)"));
  EXPECT_EQ(Run({"LOCK", "k2", "o", "1500"}), Int(1));
}

TEST_F(LockFamilyTest, WrongTypeAgainstStrings) {
  EXPECT_EQ(Run({"SET", "s", "v"}), kOk);
  EXPECT_EQ(Run({"LOCK", "s", "o", "1000"}), kWrongType);
  EXPECT_EQ(Run({"UNLOCK", "s", "v"}), kWrongType);
  EXPECT_EQ(Run({"LOCKEXTEND", "s", "o", "1000"}), kWrongType);
  EXPECT_EQ(Run({"LOCKINFO", "s"}), kWrongType);
  EXPECT_EQ(Run({"GET", "s"}), Bulk("v"));
  EXPECT_EQ(SlotOf("s").fencing_token, 0u);  // a refused LOCK takes no token
}

TEST_F(LockFamilyTest, KeyCommandsTreatLocksAsKeys) {
  EXPECT_EQ(Run({"LOCK", "res", "alice", "1000"}), Int(1));
  EXPECT_EQ(Run({"DEL", "res"}), Int(1));
  EXPECT_EQ(Run({"LOCK", "res", "bob", "1000"}), Int(2));
  EXPECT_EQ(Run({"PEXPIRE", "res", "5000"}), Int(1));
  EXPECT_EQ(Run({"LOCKINFO", "res"}), Info("bob", 2, 5000));
  EXPECT_EQ(Run({"UNLINK", "res"}), Int(1));
  EXPECT_EQ(Run({"LOCKINFO", "res"}), kNil);
}

TEST_F(LockFamilyTest, RedisLockIdiomsStillWork) {
  EXPECT_EQ(Run({"SET", "res", "token-1", "NX", "PX", "1000"}), kOk);
  EXPECT_EQ(Run({"SET", "res", "token-2", "NX", "PX", "1000"}), kNil);
  EXPECT_EQ(Run({"DELIFEQ", "res", "token-2"}), Int(0));
  EXPECT_EQ(Run({"DELIFEQ", "res", "token-1"}), Int(1));
  EXPECT_EQ(Run({"SET", "res", "token-2", "NX", "PX", "1000"}), kOk);
}

}  // namespace
}  // namespace keep::commands

namespace keep::commands {
namespace {

class LockTypeTest : public CommandFixture {
 protected:
  LockTypeTest()
      : CommandFixture(2, {StringCommands(), CounterCommands(), KeyCommands(), LockCommands()}) {}
};

TEST_F(LockTypeTest, StringCommandsSeeALockAsAnotherType) {
  ASSERT_EQ(Run({"LOCK", "job", "w1", "5000"}), ":1\r\n");
  const std::string wrong = resp::Err(errors::kWrongType);
  EXPECT_EQ(Run({"GET", "job"}), wrong);
  EXPECT_EQ(Run({"STRLEN", "job"}), wrong);
  EXPECT_EQ(Run({"APPEND", "job", "x"}), wrong);
  EXPECT_EQ(Run({"INCR", "job"}), wrong);
  EXPECT_EQ(Run({"INCRBYFLOAT", "job", "1"}), wrong);
  EXPECT_EQ(Run({"GETRANGE", "job", "0", "-1"}), wrong);
  EXPECT_EQ(Run({"SETRANGE", "job", "0", "x"}), wrong);
  EXPECT_EQ(Run({"GETDEL", "job"}), wrong);
  EXPECT_EQ(Run({"DELIFEQ", "job", "w1"}), wrong);
  EXPECT_EQ(Run({"SET", "job", "v", "GET"}), wrong);
  EXPECT_EQ(Run({"MGET", "job", "missing"}), "*2\r\n$-1\r\n$-1\r\n");
  EXPECT_EQ(Run({"TYPE", "job"}), "+lock\r\n");
  EXPECT_EQ(Run({"SCAN", "0", "TYPE", "lock", "COUNT", "100"}).find("job") != std::string::npos ||
                Run({"SCAN", "1", "TYPE", "lock", "COUNT", "100"}).find("job") != std::string::npos,
            true);
  // SET replaces a key of any type, as in Redis; the lock is gone.
  EXPECT_EQ(Run({"SET", "job", "plain"}), "+OK\r\n");
  EXPECT_EQ(Run({"TYPE", "job"}), "+string\r\n");
  EXPECT_EQ(Run({"GET", "job"}), resp::Bulk("plain"));
  EXPECT_EQ(Run({"LOCKINFO", "job"}), wrong);
}

}  // namespace
}  // namespace keep::commands
