#include "dataplane/commands/gcra.h"

#include <gtest/gtest.h>

namespace keep::commands::gcra {
namespace {

constexpr int64_t kSecond = kNanosPerSecond;
constexpr int64_t kMilli = kNanosPerMilli;

TEST(GcraTest, QuotaFromArguments) {
  Quota q;
  ASSERT_EQ(MakeQuota(4, 1, 1, 1, &q), QuotaError::kNone);
  EXPECT_EQ(q.limit, 5);
  EXPECT_EQ(q.emission_interval_ns, kSecond);
  EXPECT_EQ(q.delay_variation_tolerance_ns, 5 * kSecond);
  EXPECT_EQ(q.increment_ns, kSecond);
  // 30 per 60 s: one every 2 s; the f64 division truncates (1/3 s).
  ASSERT_EQ(MakeQuota(15, 30, 60, 2, &q), QuotaError::kNone);
  EXPECT_EQ(q.emission_interval_ns, 2 * kSecond);
  EXPECT_EQ(q.increment_ns, 4 * kSecond);
  ASSERT_EQ(MakeQuota(0, 3, 1, 1, &q), QuotaError::kNone);
  EXPECT_EQ(q.emission_interval_ns, 333333333);
  ASSERT_EQ(MakeQuota(0, 1, 1, 0, &q), QuotaError::kNone);
  EXPECT_EQ(q.increment_ns, 0);
}

TEST(GcraTest, QuotaErrors) {
  Quota q;
  EXPECT_EQ(MakeQuota(-1, 1, 1, 1, &q), QuotaError::kNegativeBurst);
  EXPECT_EQ(MakeQuota(1, 0, 1, 1, &q), QuotaError::kNonPositiveCount);
  EXPECT_EQ(MakeQuota(1, -5, 1, 1, &q), QuotaError::kNonPositiveCount);
  EXPECT_EQ(MakeQuota(1, 1, 0, 1, &q), QuotaError::kNonPositivePeriod);
  EXPECT_EQ(MakeQuota(1, 1, -1, 1, &q), QuotaError::kNonPositivePeriod);
  EXPECT_EQ(MakeQuota(1, 1, 1, -1, &q), QuotaError::kNegativeQuantity);
  EXPECT_EQ(MakeQuota(1, 1, 9223372037, 1, &q), QuotaError::kTooLarge);
  EXPECT_EQ(MakeQuota(INT64_MAX, 1, 1, 1, &q), QuotaError::kTooLarge);
  EXPECT_EQ(MakeQuota(1LL << 40, 1, 1 << 20, 1, &q), QuotaError::kTooLarge);
  EXPECT_EQ(MakeQuota(1, 1, 1, INT64_MAX, &q), QuotaError::kTooLarge);
  // A huge count makes the interval 0: legal, everything passes.
  ASSERT_EQ(MakeQuota(0, INT64_MAX, 1, 1, &q), QuotaError::kNone);
  EXPECT_EQ(q.emission_interval_ns, 0);
  Decision d;
  ASSERT_TRUE(Decide(q, 1000 * kSecond, -1, &d));
  EXPECT_FALSE(d.limited);
}

TEST(GcraTest, ReplySecondsRoundUpOnWholeMilliseconds) {
  EXPECT_EQ(ReplySeconds(-kSecond), -1);
  EXPECT_EQ(ReplySeconds(0), 0);
  EXPECT_EQ(ReplySeconds(999'999), 0);  // less than a millisecond over: not rounded up
  EXPECT_EQ(ReplySeconds(kMilli), 1);
  EXPECT_EQ(ReplySeconds(kSecond), 1);
  EXPECT_EQ(ReplySeconds(kSecond + 999'999), 1);
  EXPECT_EQ(ReplySeconds(kSecond + kMilli), 2);
  EXPECT_EQ(ReplySeconds(2900 * kMilli), 3);
  EXPECT_EQ(ReplySeconds(-1500 * kMilli), -1);
}

// redis-cell's own table (src/cell/mod.rs, it_rate_limits): 5 per second as max_burst 4, rate 1/s.
TEST(GcraTest, RedisCellTable) {
  struct Case {
    int64_t at_ms;
    int64_t quantity;
    int64_t remaining;
    int64_t reset_after_ms;
    int64_t retry_after_ms;  // -1000 for -1 s
    bool limited;
  };
  const Case cases[] = {
      {0, 6, 5, 0, -1000, true},  // never more than the burst
      {0, 1, 4, 1000, -1000, false},    {0, 1, 3, 2000, -1000, false},
      {0, 1, 2, 3000, -1000, false},    {0, 1, 1, 4000, -1000, false},
      {0, 1, 0, 5000, -1000, false},    {0, 1, 0, 5000, 1000, true},
      {3000, 1, 2, 3000, -1000, false}, {3100, 1, 1, 3900, -1000, false},
      {4000, 1, 1, 4000, -1000, false}, {8000, 1, 4, 1000, -1000, false},
      {9500, 1, 4, 1000, -1000, false}, {9500, 0, 4, 1000, -1000, false},  // peek
      {9500, 2, 2, 3000, -1000, false}, {9500, 5, 2, 3000, 3000, true},
  };
  const int64_t start = 1'700'000'000'000 * kMilli;
  int64_t tat = -1;
  int n = 0;
  for (const Case& c : cases) {
    Quota q;
    ASSERT_EQ(MakeQuota(4, 1, 1, c.quantity, &q), QuotaError::kNone);
    Decision d;
    ASSERT_TRUE(Decide(q, start + c.at_ms * kMilli, tat, &d));
    EXPECT_EQ(d.limited, c.limited) << "case " << n;
    EXPECT_EQ(d.remaining, c.remaining) << "case " << n;
    EXPECT_EQ(d.reset_after_ns, c.reset_after_ms * kMilli) << "case " << n;
    EXPECT_EQ(d.retry_after_ns, c.retry_after_ms * kMilli) << "case " << n;
    if (!d.limited) tat = d.new_tat_ns;
    ++n;
  }
}

TEST(GcraTest, StoredStateOutOfRange) {
  Quota q;
  ASSERT_EQ(MakeQuota(1, 1, 1000, 1, &q), QuotaError::kNone);
  Decision d;
  EXPECT_FALSE(Decide(q, 0, INT64_MAX - 1, &d));
  // Far-past or negative TATs (written by SET) behave like an absent key.
  ASSERT_TRUE(Decide(q, 5 * kSecond, INT64_MIN, &d));
  EXPECT_FALSE(d.limited);
  EXPECT_EQ(d.new_tat_ns, 1005 * kSecond);
}

}  // namespace
}  // namespace keep::commands::gcra
