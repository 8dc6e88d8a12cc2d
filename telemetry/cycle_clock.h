// A cheap monotonic tick source for per-command latency on the request path. Reading the TSC
// costs a few nanoseconds where clock_gettime costs 20+; ticks are converted to seconds only at
// scrape time, with a rate calibrated once against CLOCK_MONOTONIC.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace keep::telemetry {

class CycleClock {
 public:
  static uint64_t Now() {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return MonotonicNanos();
#endif
  }
  // Ticks per second, measured on first use (about 10 ms, once per process).
  static double TicksPerSecond();
  static uint64_t MonotonicNanos();
};

}  // namespace keep::telemetry
