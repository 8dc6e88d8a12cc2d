#include "dataplane/core/clock.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace keep::core {
namespace {

TEST(ClockTest, ReadsUnixMillisecondsAndNoDriftAtFirst) {
  Clock clock;
  EXPECT_LE(std::abs(clock.NowMillis() - WallMillis()), 2);
  EXPECT_LE(std::abs(clock.WallDriftMillis()), 1);
}

// A clock whose offset was read before a wall-clock step of +7 s (or -7 s) now lags (leads) the
// wall clock by that much; the drift says so, rounded to the millisecond.
TEST(ClockTest, DriftMeasuresAStepOfTheWallClock) {
  const int64_t offset = Clock().offset_ms();
  EXPECT_NEAR(Clock(offset - 7000).WallDriftMillis(), 7000, 1);
  EXPECT_NEAR(Clock(offset + 7000).WallDriftMillis(), -7000, 1);
  // NowMillis keeps its own offset: the step changes no deadline on the shard clock.
  EXPECT_NEAR(Clock(offset - 7000).NowMillis(), WallMillis() - 7000, 2);
}

// Tracking takes up a step but not the millisecond of rounding a steady wall clock shows.
TEST(ClockTest, TrackingTakesUpStepsOnly) {
  Clock steady;
  for (int i = 0; i < 100; ++i) {
    steady.TrackWallDrift();
    EXPECT_EQ(steady.wall_drift_ms(), 0);
  }
  Clock stepped(steady.offset_ms() - 7000);
  EXPECT_EQ(stepped.wall_drift_ms(), 0);
  stepped.TrackWallDrift();
  EXPECT_NEAR(stepped.wall_drift_ms(), 7000, 1);
  const int64_t taken_up = stepped.wall_drift_ms();
  stepped.TrackWallDrift();
  EXPECT_EQ(stepped.wall_drift_ms(), taken_up);
}

}  // namespace
}  // namespace keep::core
