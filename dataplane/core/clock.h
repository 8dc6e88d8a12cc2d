// The shard clock: Unix milliseconds that advance with CLOCK_MONOTONIC, so a wall-clock step
// never expires (or revives) keys en masse. The offset to the wall clock is read once at startup;
// deadlines given or asked for as Unix times (EXPIREAT, EXAT, EXPIRETIME) go through the wall
// clock's drift since then (WallDriftMillis), so they follow the wall clock as Redis's do.
#pragma once

#include <time.h>

#include <cstdint>

namespace keep::core {

inline int64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline int64_t WallNanos() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline int64_t WallMillis() { return WallNanos() / 1'000'000; }

class Clock {
 public:
  Clock() : offset_ms_(WallMillis() - MonotonicNanos() / 1'000'000) {}
  explicit Clock(int64_t offset_ms) : offset_ms_(offset_ms) {}
  int64_t NowMillis() const { return MonotonicNanos() / 1'000'000 + offset_ms_; }
  int64_t NowMicros() const { return MonotonicNanos() / 1000 + offset_ms_ * 1000; }
  int64_t offset_ms() const { return offset_ms_; }
  // The wall clock minus this clock, rounded to the millisecond: zero until the wall clock is
  // stepped or the machine is suspended (CLOCK_MONOTONIC does not count suspension). NTP slewing
  // moves both clocks alike.
  int64_t WallDriftMillis() const {
    const int64_t drift_ns = WallNanos() - MonotonicNanos() - offset_ms_ * 1'000'000;
    return (drift_ns + (drift_ns >= 0 ? 500'000 : -500'000)) / 1'000'000;
  }
  // Takes up WallDriftMillis when it moved by more than the millisecond that rounding alone can
  // make, so a deadline given as a Unix time reads back exactly while the wall clock holds still.
  void TrackWallDrift() {
    const int64_t drift = WallDriftMillis();
    if (drift > wall_drift_ms_ + 1 || drift < wall_drift_ms_ - 1) wall_drift_ms_ = drift;
  }
  int64_t wall_drift_ms() const { return wall_drift_ms_; }

 private:
  int64_t offset_ms_;
  int64_t wall_drift_ms_ = 0;
};

}  // namespace keep::core
