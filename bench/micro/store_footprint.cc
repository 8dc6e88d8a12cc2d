// Memory and growth-latency check for the store (not a timed test): inserts N keys the way
// `DEBUG POPULATE N key 8` names them ("key:i" -> "value:i") into one Store and prints resident
// bytes per key (from /proc/self/statm), accounted bytes per key (UsedBytes), and the longest
// single Find+Insert (wall clock and thread CPU time), which shows that growth never pauses.
//
//   keep_store_footprint [N]   (default 10,000,000)
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dataplane/core/clock.h"
#include "dataplane/core/store.h"

namespace {

size_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long size = 0;
  long resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Wall time includes whatever else the machine runs; thread CPU time is the store's own work.
int64_t ThreadCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

size_t Bucket(int64_t ns) {
  size_t b = 0;
  while (b < 63 && (int64_t{1} << b) < ns) ++b;
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  char key[32];
  char value[32];
  const size_t rss_before = ResidentBytes();
  int64_t max_ns = 0;
  size_t max_at = 0;
  int64_t over_10us = 0;
  int64_t max_cpu_ns = 0;
  std::vector<uint64_t> histogram(64);
  size_t max_cpu_at = 0;
  {
    keep::core::Store store;
    const int64_t start = keep::core::MonotonicNanos();
    for (size_t i = 0; i < n; ++i) {
      int key_length = std::snprintf(key, sizeof(key), "key:%zu", i);
      int value_length = std::snprintf(value, sizeof(value), "value:%zu", i);
      const int64_t c0 = ThreadCpuNanos();
      const int64_t t0 = keep::core::MonotonicNanos();
      if (store.Find({key, static_cast<size_t>(key_length)}) == nullptr) {
        store.Insert({key, static_cast<size_t>(key_length)},
                     {value, static_cast<size_t>(value_length)});
      }
      const int64_t dt = keep::core::MonotonicNanos() - t0;
      const int64_t cpu = ThreadCpuNanos() - c0;
      if (cpu > max_cpu_ns) {
        max_cpu_ns = cpu;
        max_cpu_at = i;
      }
      if (dt > max_ns) {
        max_ns = dt;
        max_at = i;
      }
      over_10us += dt > 10'000;
      ++histogram[Bucket(cpu)];
      // The shard's loop turn: expiry plus maintenance (keeps a warm spare chunk).
      if ((i & 1023) == 1023) store.ExpireSome(20);
    }
    const int64_t elapsed = keep::core::MonotonicNanos() - start;
    const size_t rss_after = ResidentBytes();
    const double keys = static_cast<double>(store.Size());
    std::printf("keys                 %zu\n", store.Size());
    std::printf("RSS growth per key   %.2f bytes\n",
                static_cast<double>(rss_after - rss_before) / keys);
    std::printf("UsedBytes per key    %.2f bytes\n", static_cast<double>(store.UsedBytes()) / keys);
    std::printf("LogicalBytes per key %.2f bytes\n",
                static_cast<double>(store.LogicalBytes()) / keys);
    const auto stats = store.GetMemoryStats();
    std::printf("  table              %.2f bytes/key (load %.3f, %zu segments), directory %.2f\n",
                static_cast<double>(stats.table_bytes) / keys,
                keys / static_cast<double>(stats.table_slots), stats.segments,
                static_cast<double>(stats.directory_bytes) / keys);
    std::printf("  records            %.2f bytes/key\n",
                static_cast<double>(stats.record_bytes) / keys);
    std::printf("insert rate          %.1f ns per Find+Insert\n",
                static_cast<double>(elapsed) / keys);
    // Percentiles of thread CPU time, from a histogram of power-of-two buckets (upper bounds).
    uint64_t seen = 0;
    size_t bucket = 0;
    for (double q : {0.5, 0.99, 0.999, 0.9999, 0.99999}) {
      while (bucket < histogram.size() &&
             static_cast<double>(seen + histogram[bucket]) < q * static_cast<double>(n)) {
        seen += histogram[bucket++];
      }
      std::printf("  p%-8g CPU        <= %.1f us\n", q * 100,
                  static_cast<double>(uint64_t{1} << bucket) / 1000.0);
    }
    std::printf(
        "max Find+Insert      %.1f us wall (at insert %zu; %lld over 10 us), %.1f us CPU "
        "(at insert %zu)\n",
        static_cast<double>(max_ns) / 1000.0, max_at, static_cast<long long>(over_10us),
        static_cast<double>(max_cpu_ns) / 1000.0, max_cpu_at);
  }
  return 0;
}
