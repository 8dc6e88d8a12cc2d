#include "dataplane/commands/gcra.h"

#include <cmath>

namespace keep::commands::gcra {
namespace {

// Rust's `f64 as i64`: truncation that saturates, NaN as 0. redis-cell relies on it.
int64_t SaturatingCast(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 9223372036854775808.0) return INT64_MAX;
  if (value <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(value);
}

int64_t Clamp(__int128 value) {
  if (value > INT64_MAX) return INT64_MAX;
  if (value < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(value);
}

}  // namespace

QuotaError MakeQuota(int64_t max_burst, int64_t count, int64_t period_s, int64_t quantity,
                     Quota* quota) {
  if (max_burst < 0) return QuotaError::kNegativeBurst;
  if (count <= 0) return QuotaError::kNonPositiveCount;
  if (period_s <= 0) return QuotaError::kNonPositivePeriod;
  if (quantity < 0) return QuotaError::kNegativeQuantity;
  int64_t period_ns;
  if (__builtin_mul_overflow(period_s, kNanosPerSecond, &period_ns)) return QuotaError::kTooLarge;
  // Rate::per_period: the division happens in f64, then truncates.
  quota->emission_interval_ns =
      SaturatingCast(static_cast<double>(period_ns) / static_cast<double>(count));
  if (max_burst == INT64_MAX) return QuotaError::kTooLarge;
  quota->limit = max_burst + 1;
  if (__builtin_mul_overflow(quota->emission_interval_ns, quota->limit,
                             &quota->delay_variation_tolerance_ns) ||
      __builtin_mul_overflow(quota->emission_interval_ns, quantity, &quota->increment_ns)) {
    return QuotaError::kTooLarge;
  }
  return QuotaError::kNone;
}

bool Decide(const Quota& quota, int64_t now_ns, int64_t tat_ns, Decision* decision) {
  *decision = Decision{};
  // 128-bit intermediates: a TAT written by SET may be anything, and nothing here may wrap.
  using Wide = __int128;
  const Wide now = now_ns;
  const Wide tat = tat_ns == -1 ? now : Wide{tat_ns};
  const Wide new_tat = (now > tat ? now : tat) + quota.increment_ns;
  if (new_tat > INT64_MAX) return false;
  // Blocked when the next permitted time (new_tat - tolerance) is still in the future.
  const Wide diff = now - (new_tat - quota.delay_variation_tolerance_ns);
  Wide ttl;
  if (diff < 0) {
    // A request larger than the whole burst can never pass: no retry time for it.
    if (quota.increment_ns <= quota.delay_variation_tolerance_ns) {
      decision->retry_after_ns = Clamp(-diff);
    }
    decision->limited = true;
    ttl = tat - now;
  } else {
    ttl = new_tat - now;
    decision->new_tat_ns = static_cast<int64_t>(new_tat);
    decision->ttl_ns = Clamp(ttl);
  }
  const Wide next = quota.delay_variation_tolerance_ns - ttl;
  if (next > -Wide{quota.emission_interval_ns}) {
    // Duration::num_microseconds truncates toward zero; the ratio is taken in f64.
    decision->remaining = SaturatingCast(static_cast<double>(Clamp(next) / 1000) /
                                         static_cast<double>(quota.emission_interval_ns / 1000));
  }
  decision->reset_after_ns = Clamp(ttl);
  return true;
}

int64_t ReplySeconds(int64_t duration_ns) {
  // time::Duration keeps whole seconds and nanoseconds of the same sign; as_seconds_f64 adds
  // them in f64 and `as i64` truncates; subsec_milliseconds > 0 only for a positive remainder.
  const int64_t seconds = duration_ns / kNanosPerSecond;
  const int64_t nanos = duration_ns % kNanosPerSecond;
  int64_t result =
      SaturatingCast(static_cast<double>(seconds) +
                     static_cast<double>(nanos) / static_cast<double>(kNanosPerSecond));
  if (nanos / kNanosPerMilli > 0) ++result;
  return result;
}

}  // namespace keep::commands::gcra
