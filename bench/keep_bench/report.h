// keep-bench's results and their two renderings: a human table and one JSON object.
#pragma once

#include <cstdint>
#include <string>

#include "bench/keep_bench/histogram.h"
#include "bench/keep_bench/options.h"

namespace keep::bench {

struct Results {
  uint64_t requests = 0;        // measured replies
  uint64_t requests_total = 0;  // every reply of the load, warm-up included (not population)
  uint64_t errors = 0;
  uint64_t nils = 0;
  uint64_t follow_ups = 0;
  uint64_t unfinished = 0;
  uint64_t populated = 0;
  double seconds = 0;
  double throughput = 0;
  Histogram histogram;
  std::string first_error;
  // --protocol binary against a cluster (libkeep's ClusterClient), summed over its clients.
  bool cluster = false;
  std::string slot_mode;  // keyed, crc16 or none (keys not placed by the client)
  uint64_t moved = 0;     // MOVED followed after the first topology fetch
  uint64_t busy_retries = 0;
  uint64_t fenced_retries = 0;
  uint64_t connection_retries = 0;
  uint64_t topology_refreshes = 0;
};

std::string FormatJson(const Options& options, const Results& results);
std::string FormatTable(const Options& options, const Results& results);
std::string JsonEscape(const std::string& text);

}  // namespace keep::bench
