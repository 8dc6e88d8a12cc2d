#include <cstdint>
#include <map>
#include <random>
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
using resp::kOk;

const std::string kWrongType =
    Err("WRONGTYPE Operation against a key holding the wrong kind of value");

std::string Ints(const std::vector<int64_t>& values) {
  std::vector<std::string> elements;
  for (int64_t v : values) elements.push_back(Int(v));
  return Array(elements);
}

class RateLimitFamilyTest : public CommandFixture {
 protected:
  RateLimitFamilyTest()
      : CommandFixture(2, {StringCommands(), CounterCommands(), KeyCommands(), LockCommands(),
                           RateLimitCommands()}) {}
};

// ---------------------------------------------------------------------------------------------
// CL.THROTTLE

TEST_F(RateLimitFamilyTest, ThrottleRedisCellReadmeExample) {
  // README: 15 burst, 30 per 60 s -> limit 16, one token per 2 s.
  EXPECT_EQ(Run({"CL.THROTTLE", "user123", "15", "30", "60"}), Ints({0, 16, 15, -1, 2}));
  EXPECT_EQ(Run({"CL.THROTTLE", "user123", "15", "30", "60", "1"}), Ints({0, 16, 14, -1, 4}));
  // The state is a plain key: the TAT in Unix nanoseconds, expiring when it no longer matters.
  EXPECT_EQ(Run({"GET", "user123"}), Bulk(std::to_string((kStartMs + 4000) * 1'000'000)));
  EXPECT_EQ(Run({"PTTL", "user123"}), Int(4000));
  EXPECT_EQ(Run({"TYPE", "user123"}), resp::Simple("string"));
}

TEST_F(RateLimitFamilyTest, ThrottleBurstThenLimited) {
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(Run({"CL.THROTTLE", "k", "4", "1", "1"}), Ints({0, 5, 4 - i, -1, i + 1}));
  }
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "4", "1", "1"}), Ints({1, 5, 0, 1, 5}));
  AdvanceTime(999);
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "4", "1", "1"}), Ints({1, 5, 0, 1, 5}));
  AdvanceTime(1);  // exactly one emission interval later: one more passes
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "4", "1", "1"}), Ints({0, 5, 0, -1, 5}));
  // Peek (quantity 0) changes nothing.
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "4", "1", "1", "0"}), Ints({0, 5, 0, -1, 5}));
  // More than the whole burst can never pass: no retry time.
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "4", "1", "1", "6"}), Ints({1, 5, 0, -1, 5}));
  // Idle: the key expires with the TAT and the burst is whole again.
  AdvanceTime(5000);
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "4", "1", "1", "0"}), Ints({0, 5, 5, -1, 0}));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));  // a peek stores nothing
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "4", "1", "1", "5"}), Ints({0, 5, 0, -1, 5}));
}

TEST_F(RateLimitFamilyTest, ThrottleArgumentErrors) {
  const std::string usage = Err("ERR wrong number of arguments for 'cl.throttle' command");
  EXPECT_EQ(Run({"CL.THROTTLE"}), usage);
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "1", "1"}), usage);
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "1", "1", "1", "1", "1"}), usage);
  for (std::string bad : {"x", "", "1.5", " 1", "1 ", "--1", "+", "9223372036854775808"}) {
    const std::string err = Err("Cell error: Couldn't parse as integer: " + bad);
    EXPECT_EQ(Run({"CL.THROTTLE", "k", bad, "1", "1"}), err) << bad;
    EXPECT_EQ(Run({"CL.THROTTLE", "k", "1", bad, "1"}), err) << bad;
    EXPECT_EQ(Run({"CL.THROTTLE", "k", "1", "1", bad}), err) << bad;
    EXPECT_EQ(Run({"CL.THROTTLE", "k", "1", "1", "1", bad}), err) << bad;
  }
  // Rust's parser takes '+' and leading zeros.
  EXPECT_EQ(Run({"CL.THROTTLE", "plus", "+1", "01", "001", "+0"}), Ints({0, 2, 2, -1, 0}));
  // Non-printable bytes are not echoed raw.
  EXPECT_EQ(Run({"CL.THROTTLE", "k", std::string("\xff\x00\r\n", 4), "1", "1"}),
            Err("Cell error: Couldn't parse as integer: ????"));
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "-1", "1", "1"}),
            Err("Cell error: max_burst must be zero or greater"));
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "1", "0", "1"}),
            Err("Cell error: count must be greater than zero"));
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "1", "-3", "1"}),
            Err("Cell error: count must be greater than zero"));
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "1", "1", "0"}),
            Err("Cell error: period must be greater than zero"));
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "1", "1", "1", "-1"}),
            Err("Cell error: quantity must be zero or greater"));
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "1", "1", "9223372036854775807"}),
            Err("Cell error: rate limit parameters out of range"));
  EXPECT_EQ(Run({"CL.THROTTLE", "k", "9223372036854775807", "1", "1"}),
            Err("Cell error: rate limit parameters out of range"));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
}

TEST_F(RateLimitFamilyTest, ThrottleOverOtherValues) {
  EXPECT_EQ(Run({"SET", "s", "abc"}), kOk);
  EXPECT_EQ(Run({"CL.THROTTLE", "s", "1", "1", "1"}),
            Err("Cell error: invalid digit found in string"));
  EXPECT_EQ(Run({"SET", "s", ""}), kOk);
  EXPECT_EQ(Run({"CL.THROTTLE", "s", "1", "1", "1"}),
            Err("Cell error: cannot parse integer from empty string"));
  EXPECT_EQ(Run({"LOCK", "l", "o", "1000"}), Int(1));
  EXPECT_EQ(Run({"CL.THROTTLE", "l", "1", "1", "1"}), kWrongType);
  // A TAT far in the future (written by SET) limits; one that overflows is refused.
  EXPECT_EQ(Run({"SET", "f", "9223372036854775000"}), kOk);
  EXPECT_EQ(Run({"CL.THROTTLE", "f", "1", "1", "1"}),
            Err("Cell error: stored rate limit state out of range"));
  EXPECT_EQ(Run({"CL.THROTTLE", "f", "1", "1", "1", "0"})[0], '*');
  // A TAT in the past counts as absent.
  EXPECT_EQ(Run({"SET", "p", "-5"}), kOk);
  EXPECT_EQ(Run({"CL.THROTTLE", "p", "1", "1", "1"}), Ints({0, 2, 1, -1, 1}));
  EXPECT_EQ(Run({"PTTL", "p"}), Int(1000));
}

TEST_F(RateLimitFamilyTest, ThrottleBinaryKeys) {
  const std::string key("\x00\xff\r\n", 4);
  EXPECT_EQ(Run({"CL.THROTTLE", key, "0", "1", "1"}), Ints({0, 1, 0, -1, 1}));
  EXPECT_EQ(Run({"CL.THROTTLE", key, "0", "1", "1"}), Ints({1, 1, 0, 1, 1}));
}

// A reference model of redis-cell running inside Redis, transcribed from its source
// (src/cell/mod.rs rate_limit, src/lib.rs reply rounding, src/cell/store.rs) with Redis's key
// semantics: the TTL is set as Duration::num_milliseconds (truncated) and a key lives while
// now <= deadline. Keep stores the TTL rounded up and expires at the deadline; the two must be
// indistinguishable in every reply.
class CellModel {
 public:
  std::vector<int64_t> Throttle(const std::string& key, int64_t max_burst, int64_t count,
                                int64_t period, int64_t quantity, int64_t now_ms) {
    auto it = keys_.find(key);
    if (it != keys_.end() && now_ms > it->second.deadline_ms) {
      keys_.erase(it);
      it = keys_.end();
    }
    const int64_t tat_val = it == keys_.end() ? -1 : it->second.tat;
    const int64_t now = now_ms * 1'000'000;
    const int64_t emission_interval = static_cast<int64_t>(
        static_cast<double>(period * 1'000'000'000) / static_cast<double>(count));
    const int64_t dvt = emission_interval * (max_burst + 1);
    const int64_t limit = max_burst + 1;
    const int64_t increment = emission_interval * quantity;
    const int64_t tat = tat_val == -1 ? now : tat_val;
    const int64_t new_tat = now > tat ? now + increment : tat + increment;
    const int64_t allow_at = new_tat - dvt;
    const int64_t diff = now - allow_at;
    int64_t retry_after = -1'000'000'000;
    int64_t remaining = 0;
    int64_t ttl;
    bool limited;
    if (diff < 0) {
      if (increment <= dvt) retry_after = -diff;
      limited = true;
      ttl = tat - now;
    } else {
      ttl = new_tat - now;
      // set_if_not_exists_with_ttl / compare_and_swap_with_ttl, then set_expire(ttl ms).
      keys_[key] = {new_tat, now_ms + ttl / 1'000'000};
      limited = false;
    }
    const int64_t next = dvt - ttl;
    if (next > -emission_interval) {
      remaining = static_cast<int64_t>(static_cast<double>(next / 1000) /
                                       static_cast<double>(emission_interval / 1000));
    }
    return {limited ? 1 : 0, limit, remaining, Seconds(retry_after), Seconds(ttl)};
  }

  // The stored TAT (ns) of a live key, or -1.
  int64_t Tat(const std::string& key, int64_t now_ms) const {
    auto it = keys_.find(key);
    return it == keys_.end() || now_ms > it->second.deadline_ms ? -1 : it->second.tat;
  }

 private:
  // time::Duration -> as_seconds_f64() as i64, + 1 if subsec_milliseconds() > 0.
  static int64_t Seconds(int64_t ns) {
    const int64_t secs = ns / 1'000'000'000;
    const int32_t nanos = static_cast<int32_t>(ns % 1'000'000'000);
    int64_t result =
        static_cast<int64_t>(static_cast<double>(secs) + static_cast<double>(nanos) / 1e9);
    if (nanos / 1'000'000 > 0) ++result;
    return result;
  }

  struct Entry {
    int64_t tat;
    int64_t deadline_ms;
  };
  std::map<std::string, Entry> keys_;
};

TEST_F(RateLimitFamilyTest, ThrottleMatchesReferenceModelOnGeneratedTraces) {
  std::mt19937_64 rng(20240611);
  const std::vector<std::string> keys = {"a", "b", "{a}x"};
  int64_t checked = 0;
  int64_t limited = 0;
  for (int trace = 0; trace < 300; ++trace) {
    CellModel model;
    Run({"FLUSHALL"});
    auto pick = [&](int64_t lo, int64_t hi) {
      return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
    };
    // Intervals that are whole, fractional (1/3 s, 1/7 s) and sub-millisecond.
    const int64_t counts[] = {1, 2, 3, 7, 10, 60, 1000, 3000};
    int64_t max_burst = pick(0, 6);
    int64_t count = counts[pick(0, 7)];
    int64_t period = pick(1, 4);
    for (int step = 0; step < 150; ++step) {
      const std::string& key = keys[pick(0, 2)];
      if (pick(0, 19) == 0) {  // redis-cell lets callers change the quota at any time
        max_burst = pick(0, 6);
        count = counts[pick(0, 7)];
        period = pick(1, 4);
      }
      int64_t quantity = pick(0, 9) < 7 ? 1 : pick(0, max_burst + 3);
      std::vector<std::string> args = {"CL.THROTTLE", key, std::to_string(max_burst),
                                       std::to_string(count), std::to_string(period)};
      if (quantity != 1 || pick(0, 1) == 0) args.push_back(std::to_string(quantity));
      std::vector<int64_t> expected =
          model.Throttle(key, max_burst, count, period, quantity, now_ms());
      ASSERT_EQ(Run(args), Ints(expected))
          << "trace " << trace << " step " << step << " t=" << now_ms() - kStartMs << " key " << key
          << " " << max_burst << " " << count << " " << period << " " << quantity;
      ++checked;
      limited += expected[0];
      // Next time: bursts (no time passes), small steps, exact clock edges (the moment the
      // TAT is reached or the next request becomes allowed, and one ms either side), idle gaps.
      const int64_t tat = model.Tat(key, now_ms());
      const int64_t dvt_ms = 1000 * period * (max_burst + 1) / count;
      switch (pick(0, 7)) {
        case 0:
        case 1:
          break;
        case 2:
          AdvanceTime(pick(1, 50));
          break;
        case 3:
          AdvanceTime(pick(0, 1500));
          break;
        case 4:
          if (tat > 0) SetTime(std::max(now_ms(), tat / 1'000'000 + pick(-1, 1)));
          break;
        case 5:
          if (tat > 0) SetTime(std::max(now_ms(), (tat / 1'000'000) - dvt_ms + pick(-1, 1)));
          break;
        case 6:
          if (expected[3] > 0) AdvanceTime(expected[3] * 1000 + pick(-1, 1));
          break;
        case 7:
          AdvanceTime(pick(0, 3) == 0 ? pick(5000, 100000) : expected[4] * 1000);
          break;
      }
    }
  }
  EXPECT_EQ(checked, 300 * 150);
  EXPECT_GT(limited, checked / 10);  // the traces do exercise the limited path
}

// ---------------------------------------------------------------------------------------------
// RATE.FIXED

TEST_F(RateLimitFamilyTest, FixedWindow) {
  EXPECT_EQ(Run({"RATE.FIXED", "w", "3", "1000"}), Ints({1, 2, 1000}));
  AdvanceTime(100);
  EXPECT_EQ(Run({"RATE.FIXED", "w", "3", "1000"}), Ints({1, 1, 900}));
  EXPECT_EQ(Run({"RATE.FIXED", "w", "3", "1000", "2"}), Ints({0, 1, 900}));  // not consumed
  EXPECT_EQ(Run({"RATE.FIXED", "w", "3", "1000", "1"}), Ints({1, 0, 900}));
  EXPECT_EQ(Run({"RATE.FIXED", "w", "3", "1000"}), Ints({0, 0, 900}));
  EXPECT_EQ(Run({"RATE.FIXED", "w", "3", "1000", "0"}), Ints({1, 0, 900}));  // peek
  EXPECT_EQ(Run({"GET", "w"}), Bulk("3"));
  EXPECT_EQ(Run({"PTTL", "w"}), Int(900));
  AdvanceTime(899);
  EXPECT_EQ(Run({"RATE.FIXED", "w", "3", "1000"}), Ints({0, 0, 1}));
  AdvanceTime(1);  // the window ends exactly at its deadline; the next one starts now
  EXPECT_EQ(Run({"RATE.FIXED", "w", "3", "1000", "3"}), Ints({1, 0, 1000}));
  // A lower limit mid-window: nothing remains, nothing passes (not even a peek).
  EXPECT_EQ(Run({"RATE.FIXED", "w", "1", "1000", "0"}), Ints({0, 0, 1000}));
}

TEST_F(RateLimitFamilyTest, FixedWindowEdgeCases) {
  // Denied or zero-cost requests open no window.
  EXPECT_EQ(Run({"RATE.FIXED", "x", "2", "1000", "3"}), Ints({0, 2, 0}));
  EXPECT_EQ(Run({"RATE.FIXED", "x", "2", "1000", "0"}), Ints({1, 2, 0}));
  EXPECT_EQ(Run({"EXISTS", "x"}), Int(0));
  EXPECT_EQ(Run({"RATE.FIXED", "z", "0", "1000"}), Ints({0, 0, 0}));
  // A counter written without a TTL gets a window.
  EXPECT_EQ(Run({"SET", "c", "5"}), kOk);
  EXPECT_EQ(Run({"RATE.FIXED", "c", "10", "500"}), Ints({1, 4, 500}));
  EXPECT_EQ(Run({"PTTL", "c"}), Int(500));
  EXPECT_EQ(Run({"SET", "c", "-9223372036854775808"}), kOk);
  EXPECT_EQ(Run({"RATE.FIXED", "c", "9223372036854775807", "500", "0"})[0], '*');
  EXPECT_EQ(Run({"SET", "s", "abc"}), kOk);
  EXPECT_EQ(Run({"RATE.FIXED", "s", "10", "500"}),
            Err("ERR value is not an integer or out of range"));
  EXPECT_EQ(Run({"LOCK", "l", "o", "1000"}), Int(1));
  EXPECT_EQ(Run({"RATE.FIXED", "l", "10", "500"}), kWrongType);
  const std::string key("\xff\x00", 2);
  EXPECT_EQ(Run({"RATE.FIXED", key, "1", "10"}), Ints({1, 0, 10}));
  EXPECT_EQ(Run({"RATE.FIXED", key, "1", "10"}), Ints({0, 0, 10}));
  EXPECT_EQ(Run({"RATE.FIXED", "big", "9223372036854775807", "10", "9223372036854775807"}),
            Ints({1, 0, 10}));
}

TEST_F(RateLimitFamilyTest, FixedWindowArgumentErrors) {
  const std::string arity = Err("ERR wrong number of arguments for 'rate.fixed' command");
  EXPECT_EQ(Run({"RATE.FIXED"}), arity);
  EXPECT_EQ(Run({"RATE.FIXED", "k", "1"}), arity);
  EXPECT_EQ(Run({"RATE.FIXED", "k", "1", "1", "1", "1"}), arity);
  const std::string not_integer = Err("ERR value is not an integer or out of range");
  for (std::string bad : {"x", "", "1.5", "+1", "01", "9223372036854775808"}) {
    EXPECT_EQ(Run({"RATE.FIXED", "k", bad, "1000"}), not_integer) << bad;
    EXPECT_EQ(Run({"RATE.FIXED", "k", "1", bad}), not_integer) << bad;
    EXPECT_EQ(Run({"RATE.FIXED", "k", "1", "1000", bad}), not_integer) << bad;
  }
  EXPECT_EQ(Run({"RATE.FIXED", "k", "-1", "1000"}), Err("ERR limit must be zero or greater"));
  const std::string expire = Err("ERR invalid expire time in 'rate.fixed' command");
  EXPECT_EQ(Run({"RATE.FIXED", "k", "1", "0"}), expire);
  EXPECT_EQ(Run({"RATE.FIXED", "k", "1", "-5"}), expire);
  EXPECT_EQ(Run({"RATE.FIXED", "k", "1", "9223372036854775807"}), expire);
  EXPECT_EQ(Run({"RATE.FIXED", "k", "1", "1000", "-1"}), Err("ERR cost must be zero or greater"));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
}

TEST_F(RateLimitFamilyTest, FixedWindowMatchesModelOnGeneratedTraces) {
  std::mt19937_64 rng(7);
  struct Window {
    int64_t used = 0;
    int64_t end = 0;  // 0: none
  };
  for (int trace = 0; trace < 100; ++trace) {
    Run({"FLUSHALL"});
    Window w;
    const int64_t limit = static_cast<int64_t>(rng() % 6);
    const int64_t window = 1 + static_cast<int64_t>(rng() % 300);
    for (int step = 0; step < 100; ++step) {
      const int64_t cost = static_cast<int64_t>(rng() % 4);
      if (w.end != 0 && now_ms() >= w.end) w = Window{};
      const bool allowed = cost <= limit - w.used;
      if (allowed && cost > 0) {
        if (w.end == 0) w.end = now_ms() + window;
        w.used += cost;
      }
      const std::vector<int64_t> expected = {allowed ? 1 : 0, std::max<int64_t>(0, limit - w.used),
                                             w.end == 0 ? 0 : w.end - now_ms()};
      ASSERT_EQ(Run({"RATE.FIXED", "f", std::to_string(limit), std::to_string(window),
                     std::to_string(cost)}),
                Ints(expected))
          << "trace " << trace << " step " << step;
      switch (rng() % 4) {
        case 0:
          break;
        case 1:
          AdvanceTime(static_cast<int64_t>(rng() % 50));
          break;
        case 2:
          if (w.end != 0) SetTime(w.end - 1 + static_cast<int64_t>(rng() % 3));
          break;
        case 3:
          AdvanceTime(static_cast<int64_t>(rng() % 1000));
          break;
      }
    }
  }
}

}  // namespace
}  // namespace keep::commands
