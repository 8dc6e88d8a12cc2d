// Open-loop arithmetic. At --rate R over C connections the run is one stream of requests spaced
// gap = 1/R apart, dealt round-robin to the connections: request k of connection c is the
// (k*C + c)-th of the stream, intended at start + (k*C + c) * gap. Each connection thus sends at
// fixed intervals of C * gap, the connections are evenly staggered, and the aggregate is exactly
// R/s. Latency is measured from these intended times, not from when a request actually left, so
// a server that falls behind shows its queueing (coordinated omission corrected).
#pragma once

#include <cstddef>
#include <cstdint>

namespace keep::bench {

class OpenLoopSchedule {
 public:
  OpenLoopSchedule() = default;
  OpenLoopSchedule(int64_t start_ns, double total_rate, int connections, int connection_index)
      : start_ns_(start_ns),
        gap_ns_(1e9L / static_cast<long double>(total_rate)),
        connections_(static_cast<uint64_t>(connections)),
        index_(static_cast<uint64_t>(connection_index)) {}

  // Intended send time of this connection's k-th request (k from 0).
  int64_t Intended(uint64_t k) const {
    long double slot = static_cast<long double>(k * connections_ + index_);
    return start_ns_ + static_cast<int64_t>(slot * gap_ns_);
  }

  // How many of this connection's requests are due at now_ns (intended at or before it).
  uint64_t DueBy(int64_t now_ns) const {
    if (now_ns < Intended(0)) return 0;
    long double elapsed = static_cast<long double>(now_ns - start_ns_);
    long double slots = elapsed / gap_ns_;
    auto k = static_cast<uint64_t>((slots - static_cast<long double>(index_)) /
                                   static_cast<long double>(connections_));
    // Float rounding can put k one off either way; settle it on Intended itself.
    while (k > 0 && Intended(k) > now_ns) --k;
    while (Intended(k + 1) <= now_ns) ++k;
    return k + 1;
  }

  int64_t start_ns() const { return start_ns_; }

 private:
  int64_t start_ns_ = 0;
  long double gap_ns_ = 0;
  uint64_t connections_ = 1;
  uint64_t index_ = 0;
};

}  // namespace keep::bench
