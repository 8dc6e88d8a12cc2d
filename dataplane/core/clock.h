// The shard clock: Unix milliseconds that advance with CLOCK_MONOTONIC, so a wall-clock step
// never expires (or revives) keys en masse. The offset to the wall clock is read once at startup.
#pragma once

#include <time.h>

#include <cstdint>

namespace keep::core {

inline int64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline int64_t WallMillis() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

class Clock {
 public:
  Clock() : offset_ms_(WallMillis() - MonotonicNanos() / 1'000'000) {}
  explicit Clock(int64_t offset_ms) : offset_ms_(offset_ms) {}
  int64_t NowMillis() const { return MonotonicNanos() / 1'000'000 + offset_ms_; }
  int64_t NowMicros() const { return MonotonicNanos() / 1000 + offset_ms_ * 1000; }
  int64_t offset_ms() const { return offset_ms_; }

 private:
  int64_t offset_ms_;
};

}  // namespace keep::core
