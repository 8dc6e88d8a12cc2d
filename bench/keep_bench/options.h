// keep-bench command-line settings and their parser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace keep::bench {

enum class Protocol { kResp, kBinary };
enum class WorkloadKind { kPing, kGet, kSet, kMixed, kIncr, kRateLimit, kLock, kCoord };
enum class Distribution { kUniform, kZipf };
enum class RateLimitForm { kNative, kGcra, kLua };
enum class LockRelease { kNative, kLua };
// --protocol binary against a cluster: auto follows what TOPOLOGY says.
enum class ClusterMode { kAuto, kOn, kOff };

struct Options {
  std::string host = "127.0.0.1";
  int port = 6379;
  Protocol protocol = Protocol::kResp;
  WorkloadKind workload = WorkloadKind::kGet;
  int threads = 1;
  // Total over all threads; connection i belongs to thread i % threads.
  int connections = 50;
  int pipeline = 1;
  // Exactly one of requests/duration bounds the measured part of the run; 0 = unset.
  uint64_t requests = 0;
  double duration_s = 0;
  // Requests per second over all connections; 0 = closed loop.
  double rate = 0;
  uint64_t keys = 10000;
  uint32_t value_size = 128;
  Distribution distribution = Distribution::kUniform;
  double zipf_exponent = 0.99;
  uint32_t ratio_reads = 9;
  uint32_t ratio_writes = 1;
  RateLimitForm ratelimit_form = RateLimitForm::kNative;
  uint64_t ratelimit_limit = 100;
  uint64_t ratelimit_window_ms = 1000;
  LockRelease lock_release = LockRelease::kNative;
  uint64_t lock_ttl_ms = 10000;
  double warmup_s = 0;
  bool json = false;
  bool quiet = false;
  // Population of the key space before read workloads: default on for get, mixed and coord.
  bool populate = true;
  bool populate_only = false;
  uint64_t seed = 1;
  // --protocol binary (through libkeep): the connections' requests are carried by `sockets`
  // libkeep connections (0: one per thread), whose batching coalesces concurrent requests into
  // shared writes unless switched off.
  bool batching = true;
  int sockets = 0;
  // --protocol binary: route by slot across a cluster's members (libkeep's ClusterClient).
  ClusterMode cluster = ClusterMode::kAuto;
  // The cluster secret that keys slots (else KEEP_SECRET); never a flag's value itself.
  std::string secret_file;
};

struct ParseResult {
  bool ok = false;
  // Set with ok: the caller should print Usage() and exit 0.
  bool help = false;
  std::string error;
  Options options;
};

ParseResult ParseOptions(const std::vector<std::string>& args);
std::string Usage();

const char* ProtocolName(Protocol p);
const char* WorkloadName(WorkloadKind w);
const char* DistributionName(Distribution d);
const char* RateLimitFormName(RateLimitForm f);
const char* LockReleaseName(LockRelease r);
const char* ClusterModeName(ClusterMode m);

// True for the workloads whose reads should find their keys: get, mixed and coord.
bool WorkloadReadsKeys(WorkloadKind w);

}  // namespace keep::bench
