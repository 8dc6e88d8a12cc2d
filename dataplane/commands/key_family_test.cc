#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

using resp::Bulk;
using resp::Err;
using resp::Int;
using resp::kNil;
using resp::kOk;

const std::string kSyntax = Err("ERR syntax error");
const std::string kNotInteger = Err("ERR value is not an integer or out of range");
const std::string kCrossSlot = Err("CROSSSLOT Keys in request don't hash to the same slot");

class KeyFamilyTest : public CommandFixture {
 protected:
  std::string InvalidExpire(std::string_view command) {
    return Err("ERR invalid expire time in '" + std::string(command) + "' command");
  }

  // Parses a "*N\r\n$L\r\nkey..." reply into its bulk strings.
  static std::vector<std::string> ParseBulkArray(std::string_view reply) {
    std::vector<std::string> out;
    EXPECT_EQ(reply.substr(0, 1), "*");
    size_t pos = reply.find("\r\n");
    int64_t count = std::stoll(std::string(reply.substr(1, pos - 1)));
    pos += 2;
    for (int64_t i = 0; i < count; ++i) {
      EXPECT_EQ(reply[pos], '$');
      size_t end = reply.find("\r\n", pos);
      size_t length = std::stoull(std::string(reply.substr(pos + 1, end - pos - 1)));
      out.emplace_back(reply.substr(end + 2, length));
      pos = end + 2 + length + 2;
    }
    EXPECT_EQ(pos, reply.size());
    return out;
  }

  // Splits a SCAN reply into its cursor and keys.
  static std::pair<std::string, std::vector<std::string>> ParseScan(std::string_view reply) {
    EXPECT_EQ(reply.substr(0, 4), "*2\r\n");
    size_t end = reply.find("\r\n", 4);
    size_t length = std::stoull(std::string(reply.substr(5, end - 5)));
    std::string cursor(reply.substr(end + 2, length));
    return {cursor, ParseBulkArray(reply.substr(end + 2 + length + 2))};
  }

  // A full SCAN iteration; fails the test if a key is returned twice.
  std::vector<std::string> ScanAll(std::vector<std::string> options, int* calls = nullptr) {
    std::vector<std::string> keys;
    std::set<std::string> seen;
    std::string cursor = "0";
    int n = 0;
    do {
      std::vector<std::string> request = {"SCAN", cursor};
      request.insert(request.end(), options.begin(), options.end());
      auto [next, batch] = ParseScan(Run(request));
      for (std::string& key : batch) {
        EXPECT_TRUE(seen.insert(key).second) << "returned twice: " << key;
        keys.push_back(std::move(key));
      }
      cursor = next;
      EXPECT_LT(++n, 100000) << "SCAN does not terminate";
      if (n >= 100000) break;
    } while (cursor != "0");
    if (calls != nullptr) *calls = n;
    return keys;
  }

  static std::vector<std::string> Sorted(std::vector<std::string> keys) {
    std::sort(keys.begin(), keys.end());
    return keys;
  }
};

// --- DEL / UNLINK / EXISTS / TOUCH / TYPE -------------------------------------------------------

TEST_F(KeyFamilyTest, DelCountsAcrossShards) {
  std::vector<std::string> zero = KeysOnShard(0, 2, "z:");
  std::vector<std::string> one = KeysOnShard(1, 2, "o:");
  EXPECT_EQ(Run({"MSET", zero[0], "1", zero[1], "2", one[0], "3"}), kOk);
  EXPECT_EQ(Run({"DEL", one[1], zero[0], one[0], "missing"}), Int(2));
  EXPECT_EQ(Run({"EXISTS", zero[0], zero[1], one[0]}), Int(1));
  EXPECT_EQ(Run({"DEL", zero[1], zero[1]}), Int(1));
  EXPECT_EQ(Run({"DEL", "nothing"}), Int(0));
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
}

TEST_F(KeyFamilyTest, DelDoesNotCountExpiredKeys) {
  EXPECT_EQ(Run({"SET", "a", "v", "PX", "100"}), kOk);
  EXPECT_EQ(Run({"SET", "b", "v"}), kOk);
  AdvanceTime(101);
  EXPECT_EQ(Run({"DEL", "a", "b"}), Int(1));
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
}

TEST_F(KeyFamilyTest, Unlink) {
  EXPECT_EQ(Run({"MSET", "a", "1", "b", "2", "c", "3"}), kOk);
  EXPECT_EQ(Run({"UNLINK", "a", "b", "x"}), Int(2));
  EXPECT_EQ(Run({"MGET", "a", "b", "c"}), resp::Array({kNil, kNil, Bulk("3")}));
}

TEST_F(KeyFamilyTest, ExistsAndTouchCountRepeats) {
  std::vector<std::string> zero = KeysOnShard(0, 1, "z:");
  std::vector<std::string> one = KeysOnShard(1, 1, "o:");
  EXPECT_EQ(Run({"EXISTS", zero[0]}), Int(0));
  EXPECT_EQ(Run({"SET", zero[0], "v"}), kOk);
  EXPECT_EQ(Run({"SET", one[0], "v"}), kOk);
  EXPECT_EQ(Run({"EXISTS", zero[0], one[0], zero[0], "missing"}), Int(3));
  EXPECT_EQ(Run({"TOUCH", one[0], "missing", one[0]}), Int(2));
  EXPECT_EQ(Run({"EXPIRE", one[0], "1"}), Int(1));
  AdvanceTime(1001);
  EXPECT_EQ(Run({"EXISTS", zero[0], one[0]}), Int(1));
}

TEST_F(KeyFamilyTest, Type) {
  EXPECT_EQ(Run({"TYPE", "k"}), "+none\r\n");
  EXPECT_EQ(Run({"SET", "k", "v", "PX", "5"}), kOk);
  EXPECT_EQ(Run({"TYPE", "k"}), "+string\r\n");
  AdvanceTime(6);
  EXPECT_EQ(Run({"TYPE", "k"}), "+none\r\n");
}

TEST_F(KeyFamilyTest, Arity) {
  EXPECT_EQ(Run({"DEL"}), Err("ERR wrong number of arguments for 'del' command"));
  EXPECT_EQ(Run({"UNLINK"}), Err("ERR wrong number of arguments for 'unlink' command"));
  EXPECT_EQ(Run({"EXISTS"}), Err("ERR wrong number of arguments for 'exists' command"));
  EXPECT_EQ(Run({"TOUCH"}), Err("ERR wrong number of arguments for 'touch' command"));
  EXPECT_EQ(Run({"TYPE"}), Err("ERR wrong number of arguments for 'type' command"));
  EXPECT_EQ(Run({"EXPIRE", "k"}), Err("ERR wrong number of arguments for 'expire' command"));
  EXPECT_EQ(Run({"PEXPIREAT", "k"}), Err("ERR wrong number of arguments for 'pexpireat' command"));
  EXPECT_EQ(Run({"TTL"}), Err("ERR wrong number of arguments for 'ttl' command"));
  EXPECT_EQ(Run({"PERSIST", "a", "b"}), Err("ERR wrong number of arguments for 'persist' command"));
  EXPECT_EQ(Run({"RENAME", "a"}), Err("ERR wrong number of arguments for 'rename' command"));
  EXPECT_EQ(Run({"COPY", "a"}), Err("ERR wrong number of arguments for 'copy' command"));
  EXPECT_EQ(Run({"KEYS"}), Err("ERR wrong number of arguments for 'keys' command"));
  EXPECT_EQ(Run({"KEYS", "a", "b"}), Err("ERR wrong number of arguments for 'keys' command"));
  EXPECT_EQ(Run({"SCAN"}), Err("ERR wrong number of arguments for 'scan' command"));
  EXPECT_EQ(Run({"RANDOMKEY", "x"}), Err("ERR wrong number of arguments for 'randomkey' command"));
  EXPECT_EQ(Run({"DBSIZE", "x"}), Err("ERR wrong number of arguments for 'dbsize' command"));
  EXPECT_EQ(Run({"DELPREFIX"}), Err("ERR wrong number of arguments for 'delprefix' command"));
}

// --- EXPIRE family ------------------------------------------------------------------------------

TEST_F(KeyFamilyTest, ExpireAndCountdown) {
  EXPECT_EQ(Run({"EXPIRE", "k", "100"}), Int(0));
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(-1));
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(-1));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(-1));
  EXPECT_EQ(Run({"EXPIRE", "k", "100"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(100));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(100000));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(kStartMs + 100000));
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(kStartMs / 1000 + 100));
  AdvanceTime(1499);
  EXPECT_EQ(Run({"PTTL", "k"}), Int(98501));
  EXPECT_EQ(Run({"TTL", "k"}), Int(99));
  AdvanceTime(98000);
  EXPECT_EQ(Run({"PTTL", "k"}), Int(501));
  EXPECT_EQ(Run({"TTL", "k"}), Int(1));
  AdvanceTime(2);
  EXPECT_EQ(Run({"TTL", "k"}), Int(0));
  AdvanceTime(500);
  EXPECT_EQ(Run({"TTL", "k"}), Int(-2));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(-2));
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(-2));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(-2));
}

TEST_F(KeyFamilyTest, LazyExpiryReclaimsOnAccess) {
  EXPECT_EQ(Run({"SET", "k", "v", "PX", "10"}), kOk);
  AdvanceTime(20);
  // Until touched, an expired key still counts, as in Redis.
  EXPECT_EQ(Run({"DBSIZE"}), Int(1));
  EXPECT_EQ(Run({"GET", "k"}), kNil);
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
}

TEST_F(KeyFamilyTest, PExpireAndAbsoluteForms) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"PEXPIRE", "k", "1500"}), Int(1));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(1500));
  EXPECT_EQ(Run({"TTL", "k"}), Int(2));
  EXPECT_EQ(Run({"EXPIREAT", "k", std::to_string(kStartMs / 1000 + 60)}), Int(1));
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(kStartMs / 1000 + 60));
  EXPECT_EQ(Run({"PEXPIREAT", "k", std::to_string(kStartMs + 123)}), Int(1));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(kStartMs + 123));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(123));
}

// After a wall-clock step (or a suspension) the Unix forms follow the wall clock, as Redis's do,
// while relative TTLs keep counting real time on the shard clock.
TEST_F(KeyFamilyTest, AbsoluteFormsFollowTheWallClockAfterAStep) {
  const int64_t wall_ms = kStartMs + 9000;  // the wall clock is 9 s ahead of the shard clock
  SetWallDrift(9000);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"PTTL", "k"}), Int(100000));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(wall_ms + 100000));
  EXPECT_EQ(Run({"EXPIREAT", "k", std::to_string(wall_ms / 1000 + 60)}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(60));
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(wall_ms / 1000 + 60));
  EXPECT_EQ(Run({"PEXPIREAT", "k", std::to_string(wall_ms + 1234)}), Int(1));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(1234));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(wall_ms + 1234));
  // Still ahead of the shard clock, but past on the wall clock: deleted.
  EXPECT_EQ(Run({"PEXPIREAT", "k", std::to_string(wall_ms - 1000)}), Int(1));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  // Deadlines at the ends of the range saturate rather than wrap (the far end reads 9 s short).
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  SetWallDrift(-9000);
  EXPECT_EQ(Run({"PEXPIREAT", "k", "9223372036854775807"}), Int(1));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(INT64_MAX - 9000));
  SetWallDrift(9000);
  EXPECT_EQ(Run({"PEXPIREAT", "k", "-9223372036854775808"}), Int(1));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
}

TEST_F(KeyFamilyTest, ExpireInThePastDeletes) {
  EXPECT_EQ(Run({"MSET", "a", "v", "b", "v", "c", "v", "d", "v", "e", "v"}), kOk);
  EXPECT_EQ(Run({"EXPIRE", "a", "-1"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "b", "0"}), Int(1));
  EXPECT_EQ(Run({"PEXPIRE", "c", "-100"}), Int(1));
  EXPECT_EQ(Run({"EXPIREAT", "d", "1"}), Int(1));
  EXPECT_EQ(Run({"PEXPIREAT", "e", std::to_string(kStartMs)}), Int(1));
  EXPECT_EQ(Run({"EXISTS", "a", "b", "c", "d", "e"}), Int(0));
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
}

TEST_F(KeyFamilyTest, ExpireConditions) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  // No TTL: XX and GT fail, NX and LT succeed.
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "XX"}), Int(0));
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "GT"}), Int(0));
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "LT"}), Int(1));
  EXPECT_EQ(Run({"PERSIST", "k"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "NX"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(100));
  // With a TTL: NX fails, XX succeeds, GT/LT compare.
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "NX"}), Int(0));
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "XX"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(200));
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "GT"}), Int(0));
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "GT"}), Int(0));
  EXPECT_EQ(Run({"EXPIRE", "k", "300", "gt"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(300));
  EXPECT_EQ(Run({"EXPIRE", "k", "400", "LT"}), Int(0));
  EXPECT_EQ(Run({"EXPIRE", "k", "300", "LT"}), Int(0));
  EXPECT_EQ(Run({"EXPIRE", "k", "50", "lt"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(50));
  EXPECT_EQ(Run({"EXPIRE", "k", "60", "XX", "GT"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "k", "70", "GT", "XX", "GT"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(70));
  EXPECT_EQ(Run({"PEXPIRE", "k", "1", "LT"}), Int(1));
  AdvanceTime(2);
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "NX"}), Int(0));  // gone
}

TEST_F(KeyFamilyTest, ExpireConditionsWithPastTimes) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  // LT against no TTL sets it, and a past time deletes.
  EXPECT_EQ(Run({"EXPIRE", "k", "-5", "LT"}), Int(1));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "10"}), kOk);
  EXPECT_EQ(Run({"EXPIRE", "k", "-5", "GT"}), Int(0));
  EXPECT_EQ(Run({"EXPIRE", "k", "-5", "XX"}), Int(1));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
}

TEST_F(KeyFamilyTest, ExpireOptionErrors) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  const std::string nx_conflict =
      Err("ERR NX and XX, GT or LT options at the same time are not compatible");
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "NX", "XX"}), nx_conflict);
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "GT", "NX"}), nx_conflict);
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "NX", "LT"}), nx_conflict);
  EXPECT_EQ(Run({"PEXPIRE", "k", "10", "NX", "GT", "LT"}), nx_conflict);
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "GT", "LT"}),
            Err("ERR GT and LT options at the same time are not compatible"));
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "XX", "LT", "GT"}),
            Err("ERR GT and LT options at the same time are not compatible"));
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "FOO"}), Err("ERR Unsupported option FOO"));
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "NX", "bar"}), Err("ERR Unsupported option bar"));
  // Options are parsed before the time.
  EXPECT_EQ(Run({"EXPIRE", "k", "soon", "FOO"}), Err("ERR Unsupported option FOO"));
  EXPECT_EQ(Run({"EXPIRE", "k", "soon"}), kNotInteger);
  EXPECT_EQ(Run({"EXPIRE", "k", "1.5"}), kNotInteger);
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
}

TEST_F(KeyFamilyTest, ExpireOverflow) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"EXPIRE", "k", "9223372036854775807"}), InvalidExpire("expire"));
  EXPECT_EQ(Run({"EXPIRE", "k", "-9223372036854775808"}), InvalidExpire("expire"));
  EXPECT_EQ(Run({"EXPIRE", "k", "9223372036854775"}), InvalidExpire("expire"));
  EXPECT_EQ(Run({"PEXPIRE", "k", "9223372036854775807"}), InvalidExpire("pexpire"));
  EXPECT_EQ(Run({"EXPIREAT", "k", "9223372036854775807"}), InvalidExpire("expireat"));
  EXPECT_EQ(Run({"EXPIREAT", "k", "-9223372036854775"}), Int(1));  // just past, fits
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"EXPIREAT", "k", "-9223372036854776"}), InvalidExpire("expireat"));
  // Errors come before the lookup.
  EXPECT_EQ(Run({"EXPIRE", "missing", "9223372036854775807"}), InvalidExpire("expire"));
  // The largest deadline is fine, and so are TTLs derived from it.
  EXPECT_EQ(Run({"PEXPIREAT", "k", "9223372036854775807"}), Int(1));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(9223372036854775807));
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(9223372036854776));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(9223372036854775807 - kStartMs));
}

TEST_F(KeyFamilyTest, Persist) {
  EXPECT_EQ(Run({"PERSIST", "k"}), Int(0));
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"PERSIST", "k"}), Int(0));
  EXPECT_EQ(Run({"EXPIRE", "k", "10"}), Int(1));
  EXPECT_EQ(Run({"PERSIST", "k"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
  AdvanceTime(20000);
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v"));
}

// --- RENAME / RENAMENX / COPY -------------------------------------------------------------------

TEST_F(KeyFamilyTest, Rename) {
  EXPECT_EQ(Run({"RENAME", "{u}a", "{u}b"}), Err("ERR no such key"));
  EXPECT_EQ(Run({"SET", "{u}a", "v", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"RENAME", "{u}a", "{u}b"}), kOk);
  EXPECT_EQ(Run({"GET", "{u}a"}), kNil);
  EXPECT_EQ(Run({"GET", "{u}b"}), Bulk("v"));
  EXPECT_EQ(Run({"TTL", "{u}b"}), Int(100));
  // Overwriting takes the source's TTL, or none.
  EXPECT_EQ(Run({"SET", "{u}c", "w"}), kOk);
  EXPECT_EQ(Run({"EXPIRE", "{u}c", "50"}), Int(1));
  EXPECT_EQ(Run({"SET", "{u}d", "x"}), kOk);
  EXPECT_EQ(Run({"RENAME", "{u}d", "{u}c"}), kOk);
  EXPECT_EQ(Run({"GET", "{u}c"}), Bulk("x"));
  EXPECT_EQ(Run({"TTL", "{u}c"}), Int(-1));
  EXPECT_EQ(Run({"DBSIZE"}), Int(2));
}

TEST_F(KeyFamilyTest, RenameSameKey) {
  EXPECT_EQ(Run({"RENAME", "k", "k"}), Err("ERR no such key"));
  EXPECT_EQ(Run({"RENAMENX", "k", "k"}), Err("ERR no such key"));
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"RENAME", "k", "k"}), kOk);
  EXPECT_EQ(Run({"RENAMENX", "k", "k"}), Int(0));
  EXPECT_EQ(Run({"GET", "k"}), Bulk("v"));
}

TEST_F(KeyFamilyTest, RenameExpiredSource) {
  EXPECT_EQ(Run({"SET", "{u}a", "v", "PX", "10"}), kOk);
  AdvanceTime(11);
  EXPECT_EQ(Run({"RENAME", "{u}a", "{u}b"}), Err("ERR no such key"));
}

TEST_F(KeyFamilyTest, RenameNx) {
  EXPECT_EQ(Run({"RENAMENX", "{u}a", "{u}b"}), Err("ERR no such key"));
  EXPECT_EQ(Run({"MSET", "{u}a", "1", "{u}b", "2"}), kOk);
  EXPECT_EQ(Run({"RENAMENX", "{u}a", "{u}b"}), Int(0));
  EXPECT_EQ(Run({"MGET", "{u}a", "{u}b"}), resp::Array({Bulk("1"), Bulk("2")}));
  EXPECT_EQ(Run({"RENAMENX", "{u}a", "{u}c"}), Int(1));
  EXPECT_EQ(Run({"MGET", "{u}a", "{u}c"}), resp::Array({kNil, Bulk("1")}));
  // An expired destination does not block it.
  EXPECT_EQ(Run({"SET", "{u}d", "old", "PX", "5"}), kOk);
  AdvanceTime(6);
  EXPECT_EQ(Run({"RENAMENX", "{u}c", "{u}d"}), Int(1));
  EXPECT_EQ(Run({"GET", "{u}d"}), Bulk("1"));
}

TEST_F(KeyFamilyTest, RenameNeedsOneSlot) {
  EXPECT_EQ(Run({"SET", "a", "v"}), kOk);
  EXPECT_EQ(Run({"RENAME", "a", "b"}), kCrossSlot);
  EXPECT_EQ(Run({"RENAMENX", "a", "b"}), kCrossSlot);
  EXPECT_EQ(Run({"COPY", "a", "b"}), kCrossSlot);
  EXPECT_EQ(Run({"GET", "a"}), Bulk("v"));
}

TEST_F(KeyFamilyTest, Copy) {
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b"}), Int(0));
  EXPECT_EQ(Run({"SET", "{u}a", "v", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b"}), Int(1));
  EXPECT_EQ(Run({"MGET", "{u}a", "{u}b"}), resp::Array({Bulk("v"), Bulk("v")}));
  EXPECT_EQ(Run({"TTL", "{u}b"}), Int(100));
  EXPECT_EQ(Run({"SET", "{u}a", "w"}), kOk);
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b"}), Int(0));
  EXPECT_EQ(Run({"GET", "{u}b"}), Bulk("v"));
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b", "REPLACE"}), Int(1));
  EXPECT_EQ(Run({"GET", "{u}b"}), Bulk("w"));
  EXPECT_EQ(Run({"TTL", "{u}b"}), Int(-1));
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}c", "DB", "0", "replace"}), Int(1));
  EXPECT_EQ(Run({"GET", "{u}c"}), Bulk("w"));
}

TEST_F(KeyFamilyTest, CopyErrors) {
  EXPECT_EQ(Run({"SET", "{u}a", "v"}), kOk);
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}a"}), Err("ERR source and destination objects are the same"));
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b", "DB", "1"}), Err("ERR DB index is out of range"));
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b", "DB", "-1"}), Err("ERR DB index is out of range"));
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b", "DB", "x"}), kNotInteger);
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b", "DB", "2147483648"}), kNotInteger);
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b", "DB"}), kSyntax);
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b", "FORCE"}), kSyntax);
  EXPECT_EQ(Run({"COPY", "{u}a", "{u}b", "REPLACE", "DB"}), kSyntax);
  EXPECT_EQ(Run({"EXISTS", "{u}b"}), Int(0));
}

// --- KEYS / SCAN / RANDOMKEY / DBSIZE -----------------------------------------------------------

TEST_F(KeyFamilyTest, KeysPatterns) {
  EXPECT_EQ(Run({"KEYS", "*"}), "*0\r\n");
  EXPECT_EQ(Run({"MSET", "hello", "1", "hallo", "1", "hxllo", "1", "hllo", "1", "heeeello", "1",
                 "user:1", "1", "user:2", "1", "h*llo", "1"}),
            kOk);
  EXPECT_EQ(Sorted(ParseBulkArray(Run({"KEYS", "h?llo"}))),
            (std::vector<std::string>{"h*llo", "hallo", "hello", "hxllo"}));
  EXPECT_EQ(Sorted(ParseBulkArray(Run({"KEYS", "h*llo"}))),
            (std::vector<std::string>{"h*llo", "hallo", "heeeello", "hello", "hllo", "hxllo"}));
  EXPECT_EQ(Sorted(ParseBulkArray(Run({"KEYS", "h[ae]llo"}))),
            (std::vector<std::string>{"hallo", "hello"}));
  EXPECT_EQ(Sorted(ParseBulkArray(Run({"KEYS", "h[^e]llo"}))),
            (std::vector<std::string>{"h*llo", "hallo", "hxllo"}));
  EXPECT_EQ(Sorted(ParseBulkArray(Run({"KEYS", "h[a-b]llo"}))),
            (std::vector<std::string>{"hallo"}));
  EXPECT_EQ(Sorted(ParseBulkArray(Run({"KEYS", "h\\*llo"}))), (std::vector<std::string>{"h*llo"}));
  EXPECT_EQ(Sorted(ParseBulkArray(Run({"KEYS", "user:*"}))),
            (std::vector<std::string>{"user:1", "user:2"}));
  EXPECT_EQ(ParseBulkArray(Run({"KEYS", "*"})).size(), 8u);
  EXPECT_EQ(Run({"KEYS", "nomatch*"}), "*0\r\n");
  EXPECT_EQ(Run({"KEYS", "user:1"}), resp::BulkArray({"user:1"}));
}

TEST_F(KeyFamilyTest, KeysSkipsExpiredAndHandlesEmptyKey) {
  EXPECT_EQ(Run({"SET", "gone", "v", "PX", "1"}), kOk);
  EXPECT_EQ(Run({"SET", "", "empty key"}), kOk);
  AdvanceTime(2);
  // The lone "*" matches everything; through the matcher, an empty key matches nothing.
  EXPECT_EQ(Run({"KEYS", "*"}), resp::BulkArray({""}));
  EXPECT_EQ(Run({"KEYS", "**"}), "*0\r\n");
}

TEST_F(KeyFamilyTest, KeysAcrossShards) {
  std::vector<std::string> zero = KeysOnShard(0, 5, "k:");
  std::vector<std::string> one = KeysOnShard(1, 5, "k:");
  for (const std::string& key : zero) EXPECT_EQ(Run({"SET", key, "v"}), kOk);
  for (const std::string& key : one) EXPECT_EQ(Run({"SET", key, "v"}), kOk);
  std::vector<std::string> expected = zero;
  expected.insert(expected.end(), one.begin(), one.end());
  EXPECT_EQ(Sorted(ParseBulkArray(Run({"KEYS", "k:*"}))), Sorted(expected));
  EXPECT_EQ(Sorted(ParseBulkArray(RunResp3({"KEYS", "*"}))), Sorted(expected));
}

TEST_F(KeyFamilyTest, ScanEveryKeyExactlyOnce) {
  std::vector<std::string> expected;
  for (int i = 0; i < 1000; ++i) expected.push_back(std::string("key:").append(std::to_string(i)));
  for (size_t i = 0; i < expected.size(); i += 100) {
    std::vector<std::string> mset = {"MSET"};
    for (size_t j = i; j < i + 100; ++j) {
      mset.push_back(expected[j]);
      mset.push_back("v");
    }
    EXPECT_EQ(Run(mset), kOk);
  }
  EXPECT_GT(store(0).Size(), 300u);
  EXPECT_GT(store(1).Size(), 300u);
  int calls = 0;
  EXPECT_EQ(Sorted(ScanAll({}, &calls)), Sorted(expected));
  EXPECT_GT(calls, 10);
  EXPECT_EQ(Sorted(ScanAll({"COUNT", "100"})), Sorted(expected));
  EXPECT_EQ(Sorted(ScanAll({"COUNT", "100000"}, &calls)), Sorted(expected));
  EXPECT_LE(calls, 2);
}

TEST_F(KeyFamilyTest, ScanMatchAndType) {
  EXPECT_EQ(Run({"MSET", "user:1", "a", "user:2", "b", "item:1", "c", "item:22", "d"}), kOk);
  EXPECT_EQ(Sorted(ScanAll({"MATCH", "user:*"})), (std::vector<std::string>{"user:1", "user:2"}));
  EXPECT_EQ(Sorted(ScanAll({"match", "item:?", "count", "1000"})),
            (std::vector<std::string>{"item:1"}));
  EXPECT_EQ(Sorted(ScanAll({"MATCH", "*"})).size(), 4u);
  EXPECT_EQ(Sorted(ScanAll({"TYPE", "string"})).size(), 4u);
  EXPECT_EQ(Sorted(ScanAll({"TYPE", "STRING", "MATCH", "user:*"})).size(), 2u);
  EXPECT_TRUE(ScanAll({"TYPE", "list"}).empty());
  EXPECT_TRUE(ScanAll({"TYPE", "nosuchtype"}).empty());
  // Options may repeat; the last wins.
  EXPECT_EQ(Sorted(ScanAll({"MATCH", "user:*", "MATCH", "item:*"})),
            (std::vector<std::string>{"item:1", "item:22"}));
}

TEST_F(KeyFamilyTest, ScanSkipsExpiredKeys) {
  EXPECT_EQ(Run({"MSET", "a", "1", "b", "2", "c", "3"}), kOk);
  EXPECT_EQ(Run({"PEXPIRE", "b", "10"}), Int(1));
  AdvanceTime(11);
  EXPECT_EQ(Sorted(ScanAll({})), (std::vector<std::string>{"a", "c"}));
}

TEST_F(KeyFamilyTest, ScanEmptyDatabase) {
  EXPECT_EQ(Sorted(ScanAll({})), std::vector<std::string>{});
  // The first shard is done at once and the cursor moves to the next one.
  EXPECT_EQ(Run({"SCAN", "0"}), "*2\r\n$1\r\n1\r\n*0\r\n");
  EXPECT_EQ(Run({"SCAN", "1"}), "*2\r\n$1\r\n0\r\n*0\r\n");
}

TEST_F(KeyFamilyTest, ScanErrors) {
  EXPECT_EQ(Run({"SCAN", "abc"}), Err("ERR invalid cursor"));
  EXPECT_EQ(Run({"SCAN", "18446744073709551616"}), Err("ERR invalid cursor"));
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "0"}), kSyntax);
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "-1"}), kSyntax);
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "x"}), kNotInteger);
  EXPECT_EQ(Run({"SCAN", "0", "COUNT"}), kSyntax);
  EXPECT_EQ(Run({"SCAN", "0", "MATCH"}), kSyntax);
  EXPECT_EQ(Run({"SCAN", "0", "TYPE"}), kSyntax);
  EXPECT_EQ(Run({"SCAN", "0", "FOO", "bar"}), kSyntax);
  EXPECT_EQ(Run({"SCAN", "1", "COUNT", "0"}), kSyntax);
}

TEST_F(KeyFamilyTest, ScanCursorEncodesShard) {
  std::vector<std::string> one = KeysOnShard(1, 3, "s:");
  for (const std::string& key : one) EXPECT_EQ(Run({"SET", key, "v"}), kOk);
  // Cursor 1 = position 0 of shard 1: everything lives there, and the walk then ends.
  auto [cursor, keys] = ParseScan(Run({"SCAN", "1", "COUNT", "1000"}));
  EXPECT_EQ(cursor, "0");
  EXPECT_EQ(Sorted(keys), Sorted(one));
  EXPECT_EQ(last_plan().shard, 1);
  EXPECT_EQ(last_plan().cursor_position, 0u);
  // Cursor 0 starts on shard 0, which is empty, so nothing comes back yet.
  auto [first, none] = ParseScan(Run({"SCAN", "0"}));
  EXPECT_EQ(first, "1");
  EXPECT_TRUE(none.empty());
}

TEST_F(KeyFamilyTest, RandomKey) {
  EXPECT_EQ(Run({"RANDOMKEY"}), kNil);
  EXPECT_EQ(RunResp3({"RANDOMKEY"}), resp::kNull3);
  std::vector<std::string> zero = KeysOnShard(0, 1, "r:");
  EXPECT_EQ(Run({"SET", zero[0], "v"}), kOk);
  EXPECT_EQ(Run({"RANDOMKEY"}), Bulk(zero[0]));
  std::vector<std::string> one = KeysOnShard(1, 1, "r:");
  EXPECT_EQ(Run({"SET", one[0], "v"}), kOk);
  std::set<std::string> seen;
  for (int i = 0; i < 200 && seen.size() < 2; ++i) seen.insert(Run({"RANDOMKEY"}));
  EXPECT_EQ(seen, (std::set<std::string>{Bulk(zero[0]), Bulk(one[0])}));
}

TEST_F(KeyFamilyTest, RandomKeySkipsExpired) {
  EXPECT_EQ(Run({"SET", "a", "v", "PX", "10"}), kOk);
  AdvanceTime(11);
  EXPECT_EQ(Run({"RANDOMKEY"}), kNil);
}

TEST_F(KeyFamilyTest, DbSize) {
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
  EXPECT_EQ(Run({"MSET", "a", "1", "b", "2", "c", "3", "d", "4"}), kOk);
  EXPECT_EQ(Run({"DBSIZE"}), Int(4));
  EXPECT_EQ(Run({"dbsize"}), Int(4));
}

// --- DELPREFIX / FLUSHALL / FLUSHDB -------------------------------------------------------------

TEST_F(KeyFamilyTest, DelPrefix) {
  std::vector<std::string> zero = KeysOnShard(0, 3, "session:");
  std::vector<std::string> one = KeysOnShard(1, 3, "session:");
  for (const std::string& key : zero) EXPECT_EQ(Run({"SET", key, "v"}), kOk);
  for (const std::string& key : one) EXPECT_EQ(Run({"SET", key, "v"}), kOk);
  EXPECT_EQ(Run({"MSET", "sess", "keep", "user:1", "keep", "Session:1", "keep"}), kOk);
  EXPECT_EQ(Run({"DELPREFIX", "session:"}), Int(6));
  EXPECT_EQ(Run({"DELPREFIX", "session:"}), Int(0));
  EXPECT_EQ(Run({"DBSIZE"}), Int(3));
  EXPECT_EQ(Run({"DELPREFIX", "nothing"}), Int(0));
  EXPECT_EQ(Run({"DELPREFIX", "user:1"}), Int(1));
  EXPECT_EQ(Run({"DELPREFIX", ""}), Int(2));
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
}

TEST_F(KeyFamilyTest, DelPrefixIgnoresExpiredKeys) {
  EXPECT_EQ(Run({"SET", "p:a", "v", "PX", "10"}), kOk);
  EXPECT_EQ(Run({"SET", "p:b", "v"}), kOk);
  AdvanceTime(11);
  EXPECT_EQ(Run({"DELPREFIX", "p:"}), Int(1));
}

TEST_F(KeyFamilyTest, FlushAll) {
  EXPECT_EQ(Run({"MSET", "a", "1", "b", "2", "c", "3"}), kOk);
  EXPECT_EQ(Run({"FLUSHALL"}), kOk);
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
  EXPECT_EQ(Run({"MSET", "a", "1", "b", "2"}), kOk);
  EXPECT_EQ(Run({"FLUSHDB", "ASYNC"}), kOk);
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
  EXPECT_EQ(Run({"SET", "a", "1"}), kOk);
  EXPECT_EQ(Run({"FLUSHALL", "sync"}), kOk);
  EXPECT_EQ(Run({"FLUSHDB"}), kOk);
  EXPECT_EQ(Run({"GET", "a"}), kNil);
}

TEST_F(KeyFamilyTest, FlushSyntaxErrors) {
  EXPECT_EQ(Run({"SET", "a", "1"}), kOk);
  EXPECT_EQ(Run({"FLUSHALL", "now"}), kSyntax);
  EXPECT_EQ(Run({"FLUSHALL", "ASYNC", "SYNC"}), kSyntax);
  EXPECT_EQ(Run({"FLUSHDB", "async", "x"}), kSyntax);
  EXPECT_EQ(Run({"DBSIZE"}), Int(1));
}

// --- One shard, handlers run without parts ------------------------------------------------------

class DirectKeyFamilyTest : public CommandFixture {
 protected:
  DirectKeyFamilyTest() : CommandFixture(1) { set_direct_single_part(true); }
};

TEST_F(DirectKeyFamilyTest, SplitAndBroadcastCommandsWithoutParts) {
  EXPECT_EQ(Run({"MSET", "a", "1", "b", "2", "c", "3"}), kOk);
  EXPECT_EQ(Run({"EXISTS", "a", "x", "a"}), Int(2));
  EXPECT_EQ(Run({"DEL", "a", "x"}), Int(1));
  EXPECT_EQ(Run({"DBSIZE"}), Int(2));
  EXPECT_EQ(Run({"KEYS", "c"}), resp::BulkArray({"c"}));
  std::string random = Run({"RANDOMKEY"});
  EXPECT_TRUE(random == Bulk("b") || random == Bulk("c")) << random;
  EXPECT_EQ(Run({"DELPREFIX", "b"}), Int(1));
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "100"}), "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nc\r\n");
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "0"}), kSyntax);
  EXPECT_EQ(Run({"FLUSHALL", "bad"}), kSyntax);
  EXPECT_EQ(Run({"FLUSHALL"}), kOk);
  EXPECT_EQ(Run({"RANDOMKEY"}), kNil);
  EXPECT_EQ(Run({"KEYS", "*"}), "*0\r\n");
}

class ManyShardsKeyFamilyTest : public CommandFixture {
 protected:
  ManyShardsKeyFamilyTest() : CommandFixture(5) {}
};

TEST_F(ManyShardsKeyFamilyTest, ScanAndMultiKeyAcrossFiveShards) {
  std::vector<std::string> keys;
  std::vector<std::string> mset = {"MSET"};
  for (int i = 0; i < 300; ++i) {
    keys.push_back(std::string("m").append(std::to_string(i)));
    mset.push_back(keys.back());
    mset.push_back(std::to_string(i));
  }
  EXPECT_EQ(Run(mset), kOk);
  for (int shard = 0; shard < 5; ++shard) EXPECT_GT(store(shard).Size(), 20u);
  EXPECT_EQ(Run({"DBSIZE"}), Int(300));
  std::vector<std::string> seen;
  std::string cursor = "0";
  do {
    std::string reply = Run({"SCAN", cursor, "COUNT", "7"});
    size_t end = reply.find("\r\n", 4);
    size_t length = std::stoull(reply.substr(5, end - 5));
    cursor = reply.substr(end + 2, length);
    std::string rest = reply.substr(end + 2 + length + 2);
    size_t pos = rest.find("\r\n") + 2;
    while (pos < rest.size()) {
      size_t line = rest.find("\r\n", pos);
      size_t n = std::stoull(rest.substr(pos + 1, line - pos - 1));
      seen.push_back(rest.substr(line + 2, n));
      pos = line + 2 + n + 2;
    }
  } while (cursor != "0");
  std::sort(seen.begin(), seen.end());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(seen, keys);
  EXPECT_EQ(Run({"MGET", "m299", "m0", "nope", "m150"}),
            resp::Array({Bulk("299"), Bulk("0"), kNil, Bulk("150")}));
  EXPECT_EQ(Run({"DEL", "m1", "m2", "m3", "m4", "m5", "m6", "nope"}), Int(6));
  EXPECT_EQ(Run({"DELPREFIX", "m1"}), Int(110));  // m1x, m1xx minus the deleted m1
}

}  // namespace
}  // namespace keep::commands
