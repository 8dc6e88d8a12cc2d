// keep-core-pingpong: what one cache line costs to move between two CPUs of this machine.
//
// Two threads, pinned to CPUs A and B, hand one cache line back and forth; the round trip is
// the latency a shard pays when it reads what the other shard wrote (a forwarded request, its
// reply, a ring index). bench/compare.sh prints it beside the two-shard figures: Keep's
// forwarding cost per request is a few of these transfers, so it says how much of keep2's cost
// over the two-thread floor the machine itself sets.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

namespace {

// Nothing to measure on this machine (ctest counts it as skipped).
constexpr int kFewerThanTwoCpus = 77;

bool Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

void Usage() {
  std::fprintf(
      stderr,
      "usage: keep-core-pingpong [--cpus A,B] [--round-trips N]\n"
      "  prints the median over 5 runs of N round trips (default 200000) of one cache\n"
      "  line between CPUs A and B (default: the first two this process may use), in ns\n");
}

struct alignas(64) Line {
  std::atomic<uint32_t> turn{0};
};

double MeasureRoundTripNs(int cpu_a, int cpu_b, long round_trips, bool* pinned) {
  Line line;
  std::atomic<bool> other_pinned{true};
  std::thread other([&] {
    if (!Pin(cpu_b)) other_pinned = false;
    for (long i = 0; i < round_trips; ++i) {
      while (line.turn.load(std::memory_order_acquire) != 1) {
      }
      line.turn.store(0, std::memory_order_release);
    }
  });
  *pinned = Pin(cpu_a);
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < round_trips; ++i) {
    line.turn.store(1, std::memory_order_release);
    while (line.turn.load(std::memory_order_acquire) != 0) {
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  other.join();
  *pinned = *pinned && other_pinned;
  return std::chrono::duration<double, std::nano>(elapsed).count() /
         static_cast<double>(round_trips);
}

}  // namespace

int main(int argc, char** argv) {
  int cpu_a = -1;
  int cpu_b = -1;
  long round_trips = 200000;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--cpus" && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%d,%d", &cpu_a, &cpu_b) != 2 || cpu_a < 0 || cpu_b < 0 ||
          cpu_a == cpu_b) {
        Usage();
        return 1;
      }
    } else if (flag == "--round-trips" && i + 1 < argc) {
      round_trips = std::strtol(argv[++i], nullptr, 10);
      if (round_trips <= 0) {
        Usage();
        return 1;
      }
    } else {
      Usage();
      return 1;
    }
  }
  // Two spinning threads on one CPU would measure the scheduler, not the caches.
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) CPU_ZERO(&allowed);
  if (cpu_a < 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE && cpu_b < 0; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed)) continue;
      (cpu_a < 0 ? cpu_a : cpu_b) = cpu;
    }
    if (cpu_b < 0) {
      std::fprintf(stderr, "keep-core-pingpong: this process may run on one CPU only\n");
      return kFewerThanTwoCpus;
    }
  } else if (!CPU_ISSET(cpu_a, &allowed) || !CPU_ISSET(cpu_b, &allowed)) {
    std::fprintf(stderr, "keep-core-pingpong: CPUs %d and %d are not both available here\n", cpu_a,
                 cpu_b);
    return 2;
  }
  double runs[5];
  for (double& run : runs) {
    bool pinned = false;
    run = MeasureRoundTripNs(cpu_a, cpu_b, round_trips, &pinned);
    if (!pinned) {
      std::fprintf(stderr, "keep-core-pingpong: could not pin to CPUs %d and %d\n", cpu_a, cpu_b);
      return 2;
    }
  }
  std::sort(std::begin(runs), std::end(runs));
  std::printf("%.1f\n", runs[2]);
  return 0;
}
