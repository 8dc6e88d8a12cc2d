#include <string>

#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

using resp::Bulk;
using resp::Err;
using resp::Int;
using resp::kEmpty;
using resp::kNil;
using resp::kOk;

class StringFamilyTest : public CommandFixture {
 protected:
  std::string InvalidExpire(std::string_view command) {
    return Err("ERR invalid expire time in '" + std::string(command) + "' command");
  }
  const std::string kSyntax = Err("ERR syntax error");
  const std::string kNotInteger = Err("ERR value is not an integer or out of range");
};

TEST_F(StringFamilyTest, GetMissing) {
  EXPECT_EQ(Run({"GET", "k"}), kNil);
  EXPECT_EQ(RunResp3({"GET", "k"}), resp::kNull3);
}

TEST_F(StringFamilyTest, SetThenGet) {
  EXPECT_EQ(Run({"SET", "k", "hello"}), kOk);
  EXPECT_EQ(Run({"GET", "k"}), "$5\r\nhello\r\n");
  EXPECT_EQ(Run({"set", "k", "again"}), kOk);
  EXPECT_EQ(Run({"gEt", "k"}), Bulk("again"));
}

TEST_F(StringFamilyTest, BinaryAndEmptyValues) {
  std::string binary("a\0b\r\nc", 6);
  EXPECT_EQ(Run({"SET", "bin", binary}), kOk);
  EXPECT_EQ(Run({"GET", "bin"}), std::string("$6\r\na\0b\r\nc\r\n", 12));
  EXPECT_EQ(Run({"SET", "empty", ""}), kOk);
  EXPECT_EQ(Run({"GET", "empty"}), kEmpty);
  std::string binary_key("k\0y", 3);
  EXPECT_EQ(Run({"SET", binary_key, "v"}), kOk);
  EXPECT_EQ(Run({"GET", binary_key}), Bulk("v"));
  EXPECT_EQ(Run({"GET", "k"}), kNil);
}

TEST_F(StringFamilyTest, Arity) {
  EXPECT_EQ(Run({"GET"}), Err("ERR wrong number of arguments for 'get' command"));
  EXPECT_EQ(Run({"GET", "a", "b"}), Err("ERR wrong number of arguments for 'get' command"));
  EXPECT_EQ(Run({"SET", "k"}), Err("ERR wrong number of arguments for 'set' command"));
  EXPECT_EQ(Run({"SETNX", "k"}), Err("ERR wrong number of arguments for 'setnx' command"));
  EXPECT_EQ(Run({"SETEX", "k", "1"}), Err("ERR wrong number of arguments for 'setex' command"));
  EXPECT_EQ(Run({"PSETEX", "k", "1"}), Err("ERR wrong number of arguments for 'psetex' command"));
  EXPECT_EQ(Run({"GETSET", "k"}), Err("ERR wrong number of arguments for 'getset' command"));
  EXPECT_EQ(Run({"GETDEL"}), Err("ERR wrong number of arguments for 'getdel' command"));
  EXPECT_EQ(Run({"GETEX"}), Err("ERR wrong number of arguments for 'getex' command"));
  EXPECT_EQ(Run({"MGET"}), Err("ERR wrong number of arguments for 'mget' command"));
  EXPECT_EQ(Run({"MSET", "k"}), Err("ERR wrong number of arguments for 'mset' command"));
  EXPECT_EQ(Run({"MSETNX", "k"}), Err("ERR wrong number of arguments for 'msetnx' command"));
  EXPECT_EQ(Run({"APPEND", "k"}), Err("ERR wrong number of arguments for 'append' command"));
  EXPECT_EQ(Run({"STRLEN"}), Err("ERR wrong number of arguments for 'strlen' command"));
  EXPECT_EQ(Run({"GETRANGE", "k", "0"}),
            Err("ERR wrong number of arguments for 'getrange' command"));
  EXPECT_EQ(Run({"SUBSTR", "k", "0"}), Err("ERR wrong number of arguments for 'substr' command"));
  EXPECT_EQ(Run({"SETRANGE", "k", "0"}),
            Err("ERR wrong number of arguments for 'setrange' command"));
  EXPECT_EQ(Run({"DELIFEQ", "k"}), Err("ERR wrong number of arguments for 'delifeq' command"));
}

// --- SET options -------------------------------------------------------------------------------

TEST_F(StringFamilyTest, SetEx) {
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "10"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), Int(10));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(10000));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(kStartMs + 10000));
  AdvanceTime(9999);
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v"));
  AdvanceTime(2);
  EXPECT_EQ(Run({"GET", "k"}), kNil);
}

TEST_F(StringFamilyTest, SetPxRoundsTtl) {
  EXPECT_EQ(Run({"SET", "k", "v", "px", "1500"}), kOk);
  EXPECT_EQ(Run({"PTTL", "k"}), Int(1500));
  EXPECT_EQ(Run({"TTL", "k"}), Int(2));
  AdvanceTime(1001);
  EXPECT_EQ(Run({"TTL", "k"}), Int(0));
}

TEST_F(StringFamilyTest, SetExAtAndPxAt) {
  int64_t at_seconds = kStartMs / 1000 + 100;
  EXPECT_EQ(Run({"SET", "a", "v", "EXAT", std::to_string(at_seconds)}), kOk);
  EXPECT_EQ(Run({"EXPIRETIME", "a"}), Int(at_seconds));
  EXPECT_EQ(Run({"PEXPIRETIME", "a"}), Int(at_seconds * 1000));
  EXPECT_EQ(Run({"SET", "b", "v", "PXAT", std::to_string(kStartMs + 1234)}), kOk);
  EXPECT_EQ(Run({"PTTL", "b"}), Int(1234));
  // A deadline in the past is accepted; the key is simply gone.
  EXPECT_EQ(Run({"SET", "c", "v", "PXAT", "1"}), kOk);
  EXPECT_EQ(Run({"GET", "c"}), kNil);
  EXPECT_EQ(Run({"SET", "d", "v", "EXAT", "1"}), kOk);
  EXPECT_EQ(Run({"EXISTS", "d"}), Int(0));
}

TEST_F(StringFamilyTest, ExAtAndPxAtFollowTheWallClockAfterAStep) {
  const int64_t wall_ms = kStartMs - 5000;  // the wall clock was stepped back 5 s
  SetWallDrift(-5000);
  EXPECT_EQ(Run({"SET", "a", "v", "EXAT", std::to_string(wall_ms / 1000 + 100)}), kOk);
  EXPECT_EQ(Run({"TTL", "a"}), Int(100));
  EXPECT_EQ(Run({"EXPIRETIME", "a"}), Int(wall_ms / 1000 + 100));
  EXPECT_EQ(Run({"SET", "b", "v", "PXAT", std::to_string(wall_ms + 1234)}), kOk);
  EXPECT_EQ(Run({"PTTL", "b"}), Int(1234));
  EXPECT_EQ(Run({"GETEX", "b", "PXAT", std::to_string(wall_ms + 4321)}), Bulk("v"));
  EXPECT_EQ(Run({"PTTL", "b"}), Int(4321));
  EXPECT_EQ(Run({"PEXPIRETIME", "b"}), Int(wall_ms + 4321));
  // Past on the shard clock but ahead on the wall clock: kept; past on the wall clock: deleted.
  EXPECT_EQ(Run({"GETEX", "b", "PXAT", std::to_string(kStartMs - 1)}), Bulk("v"));
  EXPECT_EQ(Run({"PTTL", "b"}), Int(4999));
  EXPECT_EQ(Run({"GETEX", "b", "PXAT", std::to_string(wall_ms - 1)}), Bulk("v"));
  EXPECT_EQ(Run({"EXISTS", "b"}), Int(0));
  // A wall clock far ahead puts an early Unix time below zero on the shard clock: still past.
  SetWallDrift(kStartMs);
  EXPECT_EQ(Run({"SET", "c", "v", "PXAT", std::to_string(kStartMs - 1)}), kOk);
  EXPECT_EQ(Run({"EXISTS", "c"}), Int(0));
  EXPECT_EQ(Run({"SET", "c", "v", "PXAT", std::to_string(kStartMs + 1)}), kOk);
  EXPECT_EQ(Run({"EXISTS", "c"}), Int(0));
}

TEST_F(StringFamilyTest, SetReplacesOrKeepsTtl) {
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"SET", "k", "v2", "KEEPTTL"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), Int(100));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v2"));
  EXPECT_EQ(Run({"SET", "k", "v3", "EX", "50"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), Int(50));
  EXPECT_EQ(Run({"SET", "k", "v4"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
  EXPECT_EQ(Run({"SET", "k", "v5", "keepttl"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
}

TEST_F(StringFamilyTest, SetRepeatedOptionsLastWins) {
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "10", "EX", "20"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), Int(20));
  EXPECT_EQ(Run({"SET", "k", "v", "NX", "NX"}), kNil);
  EXPECT_EQ(Run({"SET", "k", "w", "XX", "XX", "GET", "GET"}), Bulk("v"));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("w"));
}

TEST_F(StringFamilyTest, SetNxXx) {
  EXPECT_EQ(Run({"SET", "k", "v", "XX"}), kNil);
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(Run({"SET", "k", "v", "NX"}), kOk);
  EXPECT_EQ(Run({"SET", "k", "other", "NX"}), kNil);
  EXPECT_EQ(RunResp3({"SET", "k", "other", "NX"}), resp::kNull3);
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v"));
  EXPECT_EQ(Run({"SET", "k", "v2", "xx"}), kOk);
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v2"));
  // A failed NX leaves the TTL alone.
  EXPECT_EQ(Run({"SET", "t", "v", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"SET", "t", "v", "NX", "EX", "5"}), kNil);
  EXPECT_EQ(Run({"TTL", "t"}), Int(100));
}

TEST_F(StringFamilyTest, SetGet) {
  EXPECT_EQ(Run({"SET", "k", "v1", "GET"}), kNil);
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v1"));
  EXPECT_EQ(Run({"SET", "k", "v2", "GET"}), Bulk("v1"));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v2"));
  EXPECT_EQ(RunResp3({"SET", "new", "v", "GET"}), resp::kNull3);
}

TEST_F(StringFamilyTest, SetGetWithConditions) {
  // Redis 7.0 allows NX with GET: the old value comes back and nothing is set.
  EXPECT_EQ(Run({"SET", "k", "v1", "NX", "GET"}), kNil);
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v1"));
  EXPECT_EQ(Run({"SET", "k", "v2", "NX", "GET"}), Bulk("v1"));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v1"));
  EXPECT_EQ(Run({"SET", "missing", "v", "XX", "GET"}), kNil);
  EXPECT_EQ(Run({"EXISTS", "missing"}), Int(0));
  EXPECT_EQ(Run({"SET", "k", "v3", "GET", "XX", "PX", "5000"}), Bulk("v1"));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v3"));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(5000));
}

TEST_F(StringFamilyTest, SetSyntaxErrors) {
  EXPECT_EQ(Run({"SET", "k", "v", "NX", "XX"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "XX", "NX"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "EX"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "PX"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "10", "PX", "10"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "PX", "10", "EXAT", "10"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "EXAT", "10", "PXAT", "10"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "PXAT", "10", "EX", "10"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "KEEPTTL", "EX", "10"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "10", "KEEPTTL"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "PERSIST"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "FOO"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "NXX"}), kSyntax);
  // Nothing was written by any of them.
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
}

TEST_F(StringFamilyTest, SetInvalidExpireTimes) {
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "0"}), InvalidExpire("set"));
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "-1"}), InvalidExpire("set"));
  EXPECT_EQ(Run({"SET", "k", "v", "PX", "0"}), InvalidExpire("set"));
  EXPECT_EQ(Run({"SET", "k", "v", "EXAT", "0"}), InvalidExpire("set"));
  EXPECT_EQ(Run({"SET", "k", "v", "PXAT", "-5"}), InvalidExpire("set"));
  // Seconds that overflow when turned into milliseconds.
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "9223372036854775807"}), InvalidExpire("set"));
  EXPECT_EQ(Run({"SET", "k", "v", "EXAT", "9223372036854776"}), InvalidExpire("set"));
  // Fits in milliseconds, overflows once now is added.
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "9223372036854775"}), InvalidExpire("set"));
  EXPECT_EQ(Run({"SET", "k", "v", "PX", "9223372036854775807"}), InvalidExpire("set"));
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "abc"}), kNotInteger);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "10.5"}), kNotInteger);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", " 10"}), kNotInteger);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "9223372036854775808"}), kNotInteger);
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  // The expire is checked before GET reads anything.
  EXPECT_EQ(Run({"SET", "g", "old"}), kOk);
  EXPECT_EQ(Run({"SET", "g", "v", "GET", "EX", "0"}), InvalidExpire("set"));
  EXPECT_EQ(Run({"GET", "g"}), Bulk("old"));
  // The largest deadlines that fit are fine.
  EXPECT_EQ(Run({"SET", "k", "v", "PXAT", "9223372036854775807"}), kOk);
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(9223372036854775807));
  EXPECT_EQ(Run({"SET", "k", "v", "EXAT", "9223372036854775"}), kOk);
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(9223372036854775));
}

// --- SET IFEQ / DELIFEQ (Valkey) ---------------------------------------------------------------

TEST_F(StringFamilyTest, SetIfEq) {
  EXPECT_EQ(Run({"SET", "lock", "new", "IFEQ", "owner"}), kNil);
  EXPECT_EQ(Run({"EXISTS", "lock"}), Int(0));
  EXPECT_EQ(Run({"SET", "lock", "owner"}), kOk);
  EXPECT_EQ(Run({"SET", "lock", "new", "IFEQ", "other"}), kNil);
  EXPECT_EQ(Run({"GET", "lock"}), Bulk("owner"));
  EXPECT_EQ(Run({"SET", "lock", "new", "ifeq", "owner"}), kOk);
  EXPECT_EQ(Run({"GET", "lock"}), Bulk("new"));
  EXPECT_EQ(RunResp3({"SET", "lock", "x", "IFEQ", "nope"}), resp::kNull3);
}

TEST_F(StringFamilyTest, SetIfEqWithGetAndExpiry) {
  EXPECT_EQ(Run({"SET", "k", "a", "IFEQ", "a", "GET"}), kNil);
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(Run({"SET", "k", "a"}), kOk);
  EXPECT_EQ(Run({"SET", "k", "b", "GET", "IFEQ", "zzz"}), Bulk("a"));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("a"));
  EXPECT_EQ(Run({"SET", "k", "b", "IFEQ", "a", "GET", "PX", "3000"}), Bulk("a"));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("b"));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(3000));
  EXPECT_EQ(Run({"SET", "k", "c", "IFEQ", "b", "KEEPTTL"}), kOk);
  EXPECT_EQ(Run({"PTTL", "k"}), Int(3000));
  EXPECT_EQ(Run({"SET", "k", "d", "IFEQ", "c"}), kOk);
  EXPECT_EQ(Run({"PTTL", "k"}), Int(-1));
}

TEST_F(StringFamilyTest, SetIfEqConflicts) {
  EXPECT_EQ(Run({"SET", "k", "v", "NX", "IFEQ", "v"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "IFEQ", "v", "NX"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "XX", "IFEQ", "v"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "IFEQ", "v", "XX"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "IFEQ"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "IFEQ", "a", "IFEQ", "b"}), kSyntax);
}

TEST_F(StringFamilyTest, DelIfEq) {
  EXPECT_EQ(Run({"DELIFEQ", "lock", "me"}), Int(0));
  EXPECT_EQ(Run({"SET", "lock", "me"}), kOk);
  EXPECT_EQ(Run({"DELIFEQ", "lock", "you"}), Int(0));
  EXPECT_EQ(Run({"GET", "lock"}), Bulk("me"));
  EXPECT_EQ(Run({"DELIFEQ", "lock", "me"}), Int(1));
  EXPECT_EQ(Run({"EXISTS", "lock"}), Int(0));
  // An expired lock is no longer held.
  EXPECT_EQ(Run({"SET", "lock", "me", "PX", "100"}), kOk);
  AdvanceTime(101);
  EXPECT_EQ(Run({"DELIFEQ", "lock", "me"}), Int(0));
}

// --- SETNX / SETEX / PSETEX / GETSET / GETDEL ----------------------------------------------------

TEST_F(StringFamilyTest, SetNx) {
  EXPECT_EQ(Run({"SETNX", "k", "v"}), Int(1));
  EXPECT_EQ(Run({"SETNX", "k", "w"}), Int(0));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v"));
  // An expired key counts as absent.
  EXPECT_EQ(Run({"SET", "e", "v", "PX", "10"}), kOk);
  AdvanceTime(11);
  EXPECT_EQ(Run({"SETNX", "e", "fresh"}), Int(1));
  EXPECT_EQ(Run({"TTL", "e"}), Int(-1));
}

TEST_F(StringFamilyTest, SetExCommand) {
  EXPECT_EQ(Run({"SETEX", "k", "10", "v"}), kOk);
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v"));
  EXPECT_EQ(Run({"TTL", "k"}), Int(10));
  EXPECT_EQ(Run({"SETEX", "k", "20", "w"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), Int(20));
  EXPECT_EQ(Run({"SETEX", "k", "0", "v"}), InvalidExpire("setex"));
  EXPECT_EQ(Run({"SETEX", "k", "-10", "v"}), InvalidExpire("setex"));
  EXPECT_EQ(Run({"SETEX", "k", "9223372036854775807", "v"}), InvalidExpire("setex"));
  EXPECT_EQ(Run({"SETEX", "k", "ten", "v"}), kNotInteger);
  EXPECT_EQ(Run({"GET", "k"}), Bulk("w"));
}

TEST_F(StringFamilyTest, PSetEx) {
  EXPECT_EQ(Run({"PSETEX", "k", "1500", "v"}), kOk);
  EXPECT_EQ(Run({"PTTL", "k"}), Int(1500));
  EXPECT_EQ(Run({"PSETEX", "k", "0", "v"}), InvalidExpire("psetex"));
  EXPECT_EQ(Run({"PSETEX", "k", "9223372036854775807", "v"}), InvalidExpire("psetex"));
  EXPECT_EQ(Run({"PSETEX", "k", "1.5", "v"}), kNotInteger);
  AdvanceTime(1501);
  EXPECT_EQ(Run({"GET", "k"}), kNil);
}

TEST_F(StringFamilyTest, GetSet) {
  EXPECT_EQ(Run({"GETSET", "k", "v1"}), kNil);
  EXPECT_EQ(Run({"GETSET", "k", "v2"}), Bulk("v1"));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v2"));
  EXPECT_EQ(Run({"EXPIRE", "k", "100"}), Int(1));
  EXPECT_EQ(Run({"GETSET", "k", "v3"}), Bulk("v2"));
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
}

TEST_F(StringFamilyTest, GetDel) {
  EXPECT_EQ(Run({"GETDEL", "k"}), kNil);
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"GETDEL", "k"}), Bulk("v"));
  EXPECT_EQ(Run({"GET", "k"}), kNil);
  EXPECT_EQ(RunResp3({"GETDEL", "k"}), resp::kNull3);
}

// --- GETEX --------------------------------------------------------------------------------------

TEST_F(StringFamilyTest, GetExWithoutOptionsIsGet) {
  EXPECT_EQ(Run({"GETEX", "k"}), kNil);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"GETEX", "k"}), Bulk("v"));
  EXPECT_EQ(Run({"TTL", "k"}), Int(100));
}

TEST_F(StringFamilyTest, GetExSetsExpiry) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"GETEX", "k", "EX", "50"}), Bulk("v"));
  EXPECT_EQ(Run({"TTL", "k"}), Int(50));
  EXPECT_EQ(Run({"GETEX", "k", "px", "2500"}), Bulk("v"));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(2500));
  EXPECT_EQ(Run({"GETEX", "k", "EXAT", std::to_string(kStartMs / 1000 + 70)}), Bulk("v"));
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(kStartMs / 1000 + 70));
  EXPECT_EQ(Run({"GETEX", "k", "PXAT", std::to_string(kStartMs + 777)}), Bulk("v"));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(777));
  EXPECT_EQ(Run({"GETEX", "k", "PERSIST"}), Bulk("v"));
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
  EXPECT_EQ(Run({"GETEX", "k", "PERSIST"}), Bulk("v"));
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
}

TEST_F(StringFamilyTest, GetExPastDeadlineDeletes) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"GETEX", "k", "PXAT", std::to_string(kStartMs)}), Bulk("v"));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"GETEX", "k", "EXAT", "1"}), Bulk("v"));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
}

TEST_F(StringFamilyTest, GetExErrors) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"GETEX", "k", "EX", "0"}), InvalidExpire("getex"));
  EXPECT_EQ(Run({"GETEX", "k", "PX", "-1"}), InvalidExpire("getex"));
  EXPECT_EQ(Run({"GETEX", "k", "EX", "9223372036854775807"}), InvalidExpire("getex"));
  EXPECT_EQ(Run({"GETEX", "k", "EX", "x"}), kNotInteger);
  EXPECT_EQ(Run({"GETEX", "k", "EX"}), kSyntax);
  EXPECT_EQ(Run({"GETEX", "k", "NX"}), kSyntax);
  EXPECT_EQ(Run({"GETEX", "k", "XX"}), kSyntax);
  EXPECT_EQ(Run({"GETEX", "k", "GET"}), kSyntax);
  EXPECT_EQ(Run({"GETEX", "k", "KEEPTTL"}), kSyntax);
  EXPECT_EQ(Run({"GETEX", "k", "PERSIST", "EX", "10"}), kSyntax);
  EXPECT_EQ(Run({"GETEX", "k", "EX", "10", "PERSIST"}), kSyntax);
  EXPECT_EQ(Run({"GETEX", "k", "EX", "10", "PX", "10"}), kSyntax);
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
  // Syntax is checked before the lookup, the expire value only for an existing key.
  EXPECT_EQ(Run({"GETEX", "missing", "FOO"}), kSyntax);
  EXPECT_EQ(Run({"GETEX", "missing", "EX", "0"}), kNil);
}

// --- MGET / MSET / MSETNX -----------------------------------------------------------------------

TEST_F(StringFamilyTest, MGetSingleShard) {
  std::vector<std::string> keys = KeysOnShard(0, 3);
  EXPECT_EQ(Run({"SET", keys[0], "a"}), kOk);
  EXPECT_EQ(Run({"SET", keys[2], "c"}), kOk);
  EXPECT_EQ(Run({"MGET", keys[0], keys[1], keys[2]}), resp::Array({Bulk("a"), kNil, Bulk("c")}));
}

TEST_F(StringFamilyTest, MGetAcrossShardsKeepsRequestOrder) {
  std::vector<std::string> zero = KeysOnShard(0, 3, "z:");
  std::vector<std::string> one = KeysOnShard(1, 3, "o:");
  EXPECT_EQ(Run({"SET", zero[0], "z0"}), kOk);
  EXPECT_EQ(Run({"SET", zero[1], "z1"}), kOk);
  EXPECT_EQ(Run({"SET", one[0], "o0"}), kOk);
  EXPECT_EQ(Run({"SET", one[2], "o2"}), kOk);
  EXPECT_EQ(Run({"MGET", one[0], zero[0], one[1], zero[1], one[2], zero[2], one[0]}),
            resp::Array({Bulk("o0"), Bulk("z0"), kNil, Bulk("z1"), Bulk("o2"), kNil, Bulk("o0")}));
  EXPECT_EQ(last_plan().key_arg.size(), 7u);
  EXPECT_EQ(RunResp3({"MGET", zero[2], one[0]}), resp::Array({resp::kNull3, Bulk("o0")}));
}

TEST_F(StringFamilyTest, MGetSkipsExpiredKeys) {
  EXPECT_EQ(Run({"SET", "a", "1", "PX", "10"}), kOk);
  EXPECT_EQ(Run({"SET", "b", "2"}), kOk);
  AdvanceTime(20);
  EXPECT_EQ(Run({"MGET", "a", "b"}), resp::Array({kNil, Bulk("2")}));
}

TEST_F(StringFamilyTest, MSetAcrossShards) {
  std::vector<std::string> zero = KeysOnShard(0, 2, "z:");
  std::vector<std::string> one = KeysOnShard(1, 2, "o:");
  EXPECT_EQ(Run({"SET", zero[0], "old", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"MSET", zero[0], "a", one[0], "b", zero[1], "c", one[1], "d"}), kOk);
  EXPECT_EQ(Run({"MGET", one[1], one[0], zero[1], zero[0]}),
            resp::Array({Bulk("d"), Bulk("b"), Bulk("c"), Bulk("a")}));
  // MSET replaces the TTL like SET does.
  EXPECT_EQ(Run({"TTL", zero[0]}), Int(-1));
  EXPECT_EQ(store(0).Size(), 2u);
  EXPECT_EQ(store(1).Size(), 2u);
}

TEST_F(StringFamilyTest, MSetRepeatedKeyLastWins) {
  EXPECT_EQ(Run({"MSET", "k", "1", "k", "2"}), kOk);
  EXPECT_EQ(Run({"GET", "k"}), Bulk("2"));
}

TEST_F(StringFamilyTest, MSetOddArguments) {
  EXPECT_EQ(Run({"MSET", "a", "1", "b"}), Err("ERR wrong number of arguments for 'mset' command"));
  EXPECT_EQ(Run({"EXISTS", "a"}), Int(0));
}

TEST_F(StringFamilyTest, MSetNx) {
  EXPECT_EQ(Run({"MSETNX", "{t}a", "1", "{t}b", "2"}), Int(1));
  EXPECT_EQ(Run({"MGET", "{t}a", "{t}b"}), resp::Array({Bulk("1"), Bulk("2")}));
  EXPECT_EQ(Run({"MSETNX", "{t}c", "3", "{t}a", "x"}), Int(0));
  EXPECT_EQ(Run({"EXISTS", "{t}c"}), Int(0));
  EXPECT_EQ(Run({"GET", "{t}a"}), Bulk("1"));
  EXPECT_EQ(Run({"MSETNX", "{t}d", "1", "{t}d", "2"}), Int(1));
  EXPECT_EQ(Run({"GET", "{t}d"}), Bulk("2"));
}

TEST_F(StringFamilyTest, MSetNxNeedsOneSlot) {
  EXPECT_EQ(Run({"MSETNX", "a", "1", "b", "2"}),
            Err("CROSSSLOT Keys in request don't hash to the same slot"));
  EXPECT_EQ(Run({"MSETNX", "{t}a", "1", "{t}b"}),
            Err("ERR wrong number of arguments for 'msetnx' command"));
}

// --- APPEND / STRLEN ----------------------------------------------------------------------------

TEST_F(StringFamilyTest, Append) {
  EXPECT_EQ(Run({"APPEND", "k", "Hello"}), Int(5));
  EXPECT_EQ(Run({"APPEND", "k", " World"}), Int(11));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("Hello World"));
  EXPECT_EQ(Run({"APPEND", "k", ""}), Int(11));
  EXPECT_EQ(Run({"APPEND", "empty", ""}), Int(0));
  EXPECT_EQ(Run({"EXISTS", "empty"}), Int(1));
  // APPEND keeps the TTL and works on numbers as text.
  EXPECT_EQ(Run({"SET", "n", "10", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"APPEND", "n", "5"}), Int(3));
  EXPECT_EQ(Run({"GET", "n"}), Bulk("105"));
  EXPECT_EQ(Run({"TTL", "n"}), Int(100));
}

TEST_F(StringFamilyTest, AppendRespectsMaxBulkLen) {
  limits().proto_max_bulk_len = 10;
  EXPECT_EQ(Run({"APPEND", "k", "12345"}), Int(5));
  EXPECT_EQ(Run({"APPEND", "k", "67890"}), Int(10));
  EXPECT_EQ(Run({"APPEND", "k", "x"}),
            Err("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
  EXPECT_EQ(Run({"STRLEN", "k"}), Int(10));
}

TEST_F(StringFamilyTest, StrLen) {
  EXPECT_EQ(Run({"STRLEN", "k"}), Int(0));
  EXPECT_EQ(Run({"SET", "k", "hello"}), kOk);
  EXPECT_EQ(Run({"STRLEN", "k"}), Int(5));
  EXPECT_EQ(Run({"SET", "n", "-12345"}), kOk);
  EXPECT_EQ(Run({"STRLEN", "n"}), Int(6));
}

// --- GETRANGE / SUBSTR / SETRANGE ---------------------------------------------------------------

TEST_F(StringFamilyTest, GetRange) {
  EXPECT_EQ(Run({"SET", "k", "This is a string"}), kOk);
  EXPECT_EQ(Run({"GETRANGE", "k", "0", "3"}), Bulk("This"));
  EXPECT_EQ(Run({"GETRANGE", "k", "-3", "-1"}), Bulk("ing"));
  EXPECT_EQ(Run({"GETRANGE", "k", "0", "-1"}), Bulk("This is a string"));
  EXPECT_EQ(Run({"GETRANGE", "k", "10", "100"}), Bulk("string"));
  EXPECT_EQ(Run({"GETRANGE", "k", "5", "3"}), kEmpty);
  EXPECT_EQ(Run({"GETRANGE", "k", "-1", "-5"}), kEmpty);
  EXPECT_EQ(Run({"GETRANGE", "k", "-100", "-200"}), kEmpty);
  EXPECT_EQ(Run({"GETRANGE", "k", "-200", "-100"}), Bulk("T"));
  EXPECT_EQ(Run({"GETRANGE", "k", "-100", "2"}), Bulk("Thi"));
  EXPECT_EQ(Run({"GETRANGE", "k", "100", "200"}), kEmpty);
  EXPECT_EQ(Run({"GETRANGE", "k", "0", "9223372036854775807"}), Bulk("This is a string"));
  EXPECT_EQ(Run({"GETRANGE", "k", "-9223372036854775808", "0"}), Bulk("T"));
  EXPECT_EQ(Run({"SUBSTR", "k", "5", "6"}), Bulk("is"));
}

TEST_F(StringFamilyTest, GetRangeEdgeCases) {
  EXPECT_EQ(Run({"GETRANGE", "missing", "0", "-1"}), kEmpty);
  EXPECT_EQ(Run({"SET", "e", ""}), kOk);
  EXPECT_EQ(Run({"GETRANGE", "e", "0", "-1"}), kEmpty);
  EXPECT_EQ(Run({"SET", "n", "1234"}), kOk);
  EXPECT_EQ(Run({"GETRANGE", "n", "1", "2"}), Bulk("23"));
  EXPECT_EQ(Run({"GETRANGE", "n", "a", "2"}), kNotInteger);
  EXPECT_EQ(Run({"GETRANGE", "n", "0", "2.0"}), kNotInteger);
  EXPECT_EQ(Run({"GETRANGE", "missing", "x", "0"}), kNotInteger);
}

TEST_F(StringFamilyTest, SetRange) {
  EXPECT_EQ(Run({"SET", "k", "Hello World"}), kOk);
  EXPECT_EQ(Run({"SETRANGE", "k", "6", "Redis"}), Int(11));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("Hello Redis"));
  EXPECT_EQ(Run({"SETRANGE", "k", "11", "!!"}), Int(13));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("Hello Redis!!"));
  EXPECT_EQ(Run({"SETRANGE", "k", "15", "x"}), Int(16));
  EXPECT_EQ(Run({"GET", "k"}), Bulk(std::string("Hello Redis!!\0\0x", 16)));
  EXPECT_EQ(Run({"SETRANGE", "k", "0", ""}), Int(16));
  EXPECT_EQ(Run({"SETRANGE", "k", "100", ""}), Int(16));
}

TEST_F(StringFamilyTest, SetRangeOnMissingKey) {
  EXPECT_EQ(Run({"SETRANGE", "k", "5", ""}), Int(0));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(Run({"SETRANGE", "k", "3", "abc"}), Int(6));
  EXPECT_EQ(Run({"GET", "k"}), Bulk(std::string("\0\0\0abc", 6)));
  EXPECT_EQ(Run({"SETRANGE", "z", "0", "xyz"}), Int(3));
  EXPECT_EQ(Run({"GET", "z"}), Bulk("xyz"));
}

TEST_F(StringFamilyTest, SetRangeKeepsTtlAndRewritesNumbers) {
  EXPECT_EQ(Run({"SET", "n", "1234", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"SETRANGE", "n", "1", "9"}), Int(4));
  EXPECT_EQ(Run({"GET", "n"}), Bulk("1934"));
  EXPECT_EQ(Run({"INCR", "n"}), Int(1935));
  EXPECT_EQ(Run({"TTL", "n"}), Int(100));
}

TEST_F(StringFamilyTest, SetRangeErrors) {
  EXPECT_EQ(Run({"SETRANGE", "k", "-1", "x"}), Err("ERR offset is out of range"));
  EXPECT_EQ(Run({"SETRANGE", "k", "one", "x"}), kNotInteger);
  EXPECT_EQ(Run({"SETRANGE", "k", "536870912", "x"}),
            Err("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
  EXPECT_EQ(Run({"SETRANGE", "k", "9223372036854775807", "x"}),
            Err("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  limits().proto_max_bulk_len = 100;
  EXPECT_EQ(Run({"SETRANGE", "k", "99", "ab"}),
            Err("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
  EXPECT_EQ(Run({"SETRANGE", "k", "98", "ab"}), Int(100));
  EXPECT_EQ(Run({"SETRANGE", "k", "99", "ab"}),
            Err("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
  EXPECT_EQ(Run({"SETRANGE", "k", "99", "a"}), Int(100));
}

// --- RESP3 and handlers run without parts -------------------------------------------------------

TEST_F(StringFamilyTest, Resp3Replies) {
  EXPECT_EQ(RunResp3({"SET", "k", "v"}), kOk);
  EXPECT_EQ(RunResp3({"GET", "k"}), Bulk("v"));
  EXPECT_EQ(RunResp3({"GETRANGE", "missing", "0", "1"}), kEmpty);
  EXPECT_EQ(RunResp3({"GETEX", "missing"}), resp::kNull3);
}

class StringFamilyOneShardTest : public CommandFixture {
 protected:
  StringFamilyOneShardTest() : CommandFixture(1) { set_direct_single_part(true); }
};

TEST_F(StringFamilyOneShardTest, MultiKeyCommandsWithoutParts) {
  EXPECT_EQ(Run({"MSET", "a", "1", "b", "2"}), kOk);
  EXPECT_EQ(Run({"MGET", "a", "x", "b"}), resp::Array({Bulk("1"), kNil, Bulk("2")}));
  EXPECT_EQ(RunResp3({"MGET", "x"}), resp::Array({resp::kNull3}));
  EXPECT_EQ(Run({"MSET", "a", "1", "b"}), Err("ERR wrong number of arguments for 'mset' command"));
}

}  // namespace
}  // namespace keep::commands
