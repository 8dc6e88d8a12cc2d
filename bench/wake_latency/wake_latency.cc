// keep-wake-latency: how late this machine runs a thread that sleeps until a deadline.
//
// One thread sleeps to absolute deadlines `--interval-us` apart (clock_nanosleep, as cyclictest
// does) and records how late it woke. That lateness is what any latency probe, and any server
// thread woken by a request, pays to the scheduler before it runs: bench/memory.sh part b runs it
// beside the GET probe while 10M keys load, so the server's tail can be read against the
// machine's own (a p99.9 the machine cannot deliver to an idle sleeper, no server delivers).
//
// Output, one line: `wake_latency samples=N p50_us=.. p99_us=.. p999_us=.. max_us=..`. With
// `--seconds 0` it runs until SIGTERM or SIGINT, then prints (memory.sh stops it when a load ends).
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

volatile sig_atomic_t stop_requested = 0;

void RequestStop(int) { stop_requested = 1; }

void Usage() {
  std::fprintf(
      stderr,
      "usage: keep-wake-latency [--seconds S] [--interval-us N]\n"
      "  sleeps to deadlines N us apart (default 500) for S seconds (default 5; 0: until\n"
      "  SIGTERM or SIGINT) and prints how late it woke: p50, p99, p99.9 and max, in us\n");
}

int64_t Nanos(const timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

timespec FromNanos(int64_t ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

double Percentile(const std::vector<int64_t>& sorted, double p) {
  const size_t index = std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()));
  return static_cast<double>(sorted[index]) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  long interval_us = 500;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    char* end = nullptr;
    if (arg == "--seconds" && value != nullptr) {
      seconds = std::strtod(value, &end);
      if (*end != '\0' || !(seconds >= 0 && seconds <= 3600)) {
        std::fprintf(stderr, "keep-wake-latency: --seconds wants a number in [0, 3600]\n");
        return 1;
      }
      ++i;
    } else if (arg == "--interval-us" && value != nullptr) {
      interval_us = std::strtol(value, &end, 10);
      if (*end != '\0' || interval_us < 10 || interval_us > 1'000'000) {
        std::fprintf(stderr, "keep-wake-latency: --interval-us wants 10..1000000\n");
        return 1;
      }
      ++i;
    } else {
      Usage();
      return arg == "--help" ? 0 : 1;
    }
  }
  struct sigaction action {};
  action.sa_handler = RequestStop;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  // The default 50 us of timer slack would be read as lateness: what is measured is the
  // scheduler's delay, as a thread woken by a packet sees it.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  const int64_t interval = int64_t{interval_us} * 1000;
  std::vector<int64_t> lateness;
  lateness.reserve(static_cast<size_t>((seconds > 0 ? seconds : 60) * 1e6 / interval_us) + 1);
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t end =
      seconds > 0 ? Nanos(now) + static_cast<int64_t>(seconds * 1e9) : INT64_MAX - interval;
  int64_t deadline = Nanos(now) + interval;
  while (deadline < end && stop_requested == 0) {
    const timespec wake = FromNanos(deadline);
    if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nullptr) != 0) continue;
    clock_gettime(CLOCK_MONOTONIC, &now);
    lateness.push_back(Nanos(now) - deadline);
    // A wake-up later than a whole interval skips the deadlines it missed rather than running
    // them back to back, so one stall is one sample, as for a probe that waits its turn.
    deadline += interval * std::max<int64_t>(1, (Nanos(now) - deadline) / interval + 1);
  }
  if (lateness.empty()) {
    std::fprintf(stderr, "keep-wake-latency: no sample in %.3f s\n", seconds);
    return 1;
  }
  std::sort(lateness.begin(), lateness.end());
  std::printf("wake_latency samples=%zu p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f\n",
              lateness.size(), Percentile(lateness, 0.5), Percentile(lateness, 0.99),
              Percentile(lateness, 0.999), static_cast<double>(lateness.back()) / 1e3);
  return 0;
}
