// One load thread: its own level-triggered epoll loop over its non-blocking connections. Each
// connection keeps up to --pipeline requests in flight (closed loop) or sends on the open-loop
// schedule with at most --pipeline in flight, the rest waiting on the client while their latency
// keeps counting from the intended send time. Replies come back in request order (RESP), so a
// ring of in-flight records per connection matches them. Per request the hot path does a memcpy
// of a template, a few digit writes, a histogram increment: no allocation once buffers are warm.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/keep_bench/histogram.h"
#include "bench/keep_bench/options.h"
#include "bench/keep_bench/protocol.h"
#include "bench/keep_bench/workload.h"

namespace keep::bench {

int64_t NowNs();

// The run's timeline, shared by every thread.
struct RunClock {
  int64_t start_ns = 0;
  // Replies to requests issued (or, open loop, intended) before this are warm-up.
  int64_t measure_start_ns = 0;
  // Duration mode: no request is issued (or, open loop, intended) at or after this; requests
  // mode: INT64_MAX.
  int64_t measure_end_ns = 0;
};

struct ThreadStats {
  Histogram histogram;
  uint64_t measured = 0;  // replies to measured requests (follow-ups included)
  uint64_t total = 0;     // every reply, warm-up included
  uint64_t errors = 0;    // error replies among the measured
  uint64_t nils = 0;      // nil replies among the measured (misses, locks not acquired)
  uint64_t follow_ups = 0;
  // Requests still in flight or due but unsent when the drain deadline passed.
  uint64_t unfinished = 0;
  int64_t last_reply_ns = 0;
  std::string first_error;
  // Set when the run cannot go on: the server closed a connection or sent an unparsable reply.
  std::string fatal;
};

struct alignas(64) ThreadProgress {
  std::atomic<uint64_t> replies{0};
  std::atomic<uint64_t> errors{0};
};

struct ThreadConfig {
  const Options* options = nullptr;
  const Codec* codec = nullptr;
  const Workload* workload = nullptr;
  RunClock clock;
  // Connected non-blocking sockets and their global connection indexes.
  std::vector<int> fds;
  std::vector<int> indexes;
  // Requests mode: scheduled requests this thread issues in the measured part.
  uint64_t quota = 0;
  std::atomic<bool>* abort = nullptr;
  ThreadProgress* progress = nullptr;
};

// Runs the thread's share of the load to the end; the result is in *stats.
void RunLoadThread(const ThreadConfig& config, ThreadStats* stats);

}  // namespace keep::bench
