// The generic cell rate algorithm behind CL.THROTTLE, with redis-cell's exact arithmetic
// (src/cell/mod.rs and src/lib.rs of brandur/redis-cell): nanosecond durations, the emission
// interval computed in floating point and truncated, `remaining` from microseconds, and reply
// seconds rounded up whenever a whole millisecond is left over. Pure: no store, no clock.
#pragma once

#include <cstdint>

namespace keep::commands::gcra {

inline constexpr int64_t kNanosPerSecond = 1'000'000'000;
inline constexpr int64_t kNanosPerMilli = 1'000'000;

// The rate of one request, from CL.THROTTLE's arguments.
struct Quota {
  int64_t limit = 0;                         // max_burst + 1
  int64_t emission_interval_ns = 0;          // period / count
  int64_t delay_variation_tolerance_ns = 0;  // emission interval * (max_burst + 1)
  int64_t increment_ns = 0;                  // emission interval * quantity
};

enum class QuotaError {
  kNone,
  kNegativeBurst,
  kNonPositiveCount,
  kNonPositivePeriod,
  kNegativeQuantity,
  kTooLarge,  // some duration does not fit 64-bit nanoseconds
};

// redis-cell accepts any i64 and then divides by zero or overflows; Keep refuses those inputs.
QuotaError MakeQuota(int64_t max_burst, int64_t count, int64_t period_s, int64_t quantity,
                     Quota* quota);

struct Decision {
  bool limited = false;
  int64_t remaining = 0;
  int64_t retry_after_ns = -kNanosPerSecond;  // -1 s when allowed (or never possible)
  int64_t reset_after_ns = 0;
  // When allowed, the new theoretical arrival time to store, to expire after ttl_ns.
  int64_t new_tat_ns = 0;
  int64_t ttl_ns = 0;
};

// One request at `now_ns` against the stored TAT (`tat_ns`, or -1 when the key is absent).
// False when the stored TAT is so far out that the new one overflows.
bool Decide(const Quota& quota, int64_t now_ns, int64_t tat_ns, Decision* decision);

// redis-cell's reply seconds: truncated, plus one when at least a millisecond remains.
int64_t ReplySeconds(int64_t duration_ns);

}  // namespace keep::commands::gcra
