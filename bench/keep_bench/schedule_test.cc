#include "bench/keep_bench/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace keep::bench {
namespace {

TEST(OpenLoopScheduleTest, FixedIntervalsPerConnection) {
  // 20k/s over 50 connections: 400/s each, 2.5 ms apart, staggered by 50 us.
  OpenLoopSchedule c0(1'000'000, 20000, 50, 0);
  OpenLoopSchedule c7(1'000'000, 20000, 50, 7);
  EXPECT_EQ(c0.Intended(0), 1'000'000);
  EXPECT_EQ(c0.Intended(1), 1'000'000 + 2'500'000);
  EXPECT_EQ(c0.Intended(400), 1'000'000 + 1'000'000'000);
  EXPECT_EQ(c7.Intended(0), 1'000'000 + 7 * 50'000);
  EXPECT_EQ(c7.Intended(3), 1'000'000 + 3 * 2'500'000 + 7 * 50'000);
}

TEST(OpenLoopScheduleTest, AggregateIsEvenlySpacedAtTheRate) {
  // A rate that does not divide a second: 3 per ms over 7 connections.
  const int kConnections = 7;
  const double kRate = 3000;
  std::vector<int64_t> all;
  for (int c = 0; c < kConnections; ++c) {
    OpenLoopSchedule s(0, kRate, kConnections, c);
    for (uint64_t k = 0; s.Intended(k) < 1'000'000'000; ++k) all.push_back(s.Intended(k));
  }
  EXPECT_EQ(all.size(), 3000u);  // exactly the rate over one second
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); ++i) {
    int64_t gap = all[i] - all[i - 1];
    ASSERT_GE(gap, 333'333);
    ASSERT_LE(gap, 333'334);
  }
}

TEST(OpenLoopScheduleTest, DueByCountsIntendedTimesAtOrBeforeNow) {
  OpenLoopSchedule s(5'000, 1000, 4, 2);  // every 4 ms, first at 5000 + 2 ms
  EXPECT_EQ(s.DueBy(0), 0u);
  EXPECT_EQ(s.DueBy(5'000 + 2'000'000 - 1), 0u);
  EXPECT_EQ(s.DueBy(5'000 + 2'000'000), 1u);
  EXPECT_EQ(s.DueBy(5'000 + 6'000'000 - 1), 1u);
  EXPECT_EQ(s.DueBy(5'000 + 6'000'000), 2u);
  // After a stall of a second, 250 requests are due at once: the client-side queue.
  EXPECT_EQ(s.DueBy(5'000 + 1'002'000'000), 251u);
  for (int64_t now = 0; now < 50'000'000; now += 77'777) {
    uint64_t due = s.DueBy(now);
    if (due > 0) {
      ASSERT_LE(s.Intended(due - 1), now);
    }
    ASSERT_GT(s.Intended(due), now);
  }
}

TEST(OpenLoopScheduleTest, LongRunsStayExact) {
  // A day at 1M/s: integer-exact slots far out.
  OpenLoopSchedule s(0, 1e6, 1, 0);
  EXPECT_EQ(s.Intended(86'400'000'000ull), 86'400'000'000'000ll);
  EXPECT_EQ(s.DueBy(86'400'000'000'000ll), 86'400'000'001ull);
}

}  // namespace
}  // namespace keep::bench
