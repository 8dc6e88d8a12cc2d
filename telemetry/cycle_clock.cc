#include "telemetry/cycle_clock.h"

#include <time.h>

namespace keep::telemetry {

uint64_t CycleClock::MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

double CycleClock::TicksPerSecond() {
  static const double rate = [] {
#if defined(__x86_64__)
    uint64_t ns_start = MonotonicNanos();
    uint64_t ticks_start = Now();
    timespec pause{0, 10'000'000};
    nanosleep(&pause, nullptr);
    uint64_t ns = MonotonicNanos() - ns_start;
    uint64_t ticks = Now() - ticks_start;
    return ns == 0 ? 1e9 : static_cast<double>(ticks) * 1e9 / static_cast<double>(ns);
#else
    return 1e9;
#endif
  }();
  return rate;
}

}  // namespace keep::telemetry
