// Per-shard metrics (design §4): every value here is written by exactly one shard thread and read
// by the scrape on the control thread. Single-writer relaxed atomics compile to plain loads and
// stores on x86, so counting costs what a non-atomic increment costs and the request path touches
// nothing shared. Command counters and latency are written per request; everything else is a
// snapshot the shard publishes from its timer tick (every 100 ms), so most figures cost nothing
// on the request path at all.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace keep::telemetry {

// A counter or gauge with one writer thread.
class LocalValue {
 public:
  void Add(uint64_t n = 1) {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void Set(uint64_t v) { value_.store(v, std::memory_order_relaxed); }
  uint64_t Read() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Upper bounds of the command latency buckets, in seconds: 1 µs to 1 s, three per decade.
// One command in this many (a power of two) per shard is timed into the duration histogram.
inline constexpr uint64_t kLatencySampleEvery = 16;
static_assert((kLatencySampleEvery & (kLatencySampleEvery - 1)) == 0);

inline constexpr std::array<double, 19> kLatencyBoundsSeconds = {
    1e-6,   2.5e-6, 5e-6, 1e-5,   2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3,
    2.5e-3, 5e-3,   1e-2, 2.5e-2, 5e-2,   0.1,  0.25, 0.5,    1.0};

// A latency histogram in CycleClock ticks with one writer thread. Buckets are not cumulative
// here; the collector accumulates them when it builds the Prometheus histogram.
class LocalHistogram {
 public:
  static constexpr size_t kBuckets = kLatencyBoundsSeconds.size() + 1;  // the last is +Inf

  // `bounds` are the bucket bounds converted to ticks (shared by every histogram of a process).
  void Observe(uint64_t ticks, const std::array<uint64_t, kLatencyBoundsSeconds.size()>& bounds) {
    size_t i = 0;
    while (i < bounds.size() && ticks > bounds[i]) ++i;
    counts_[i].Add();
    sum_ticks_.Add(ticks);
  }
  uint64_t count(size_t bucket) const { return counts_[bucket].Read(); }
  uint64_t sum_ticks() const { return sum_ticks_.Read(); }

 private:
  std::array<LocalValue, kBuckets> counts_;
  LocalValue sum_ticks_;
};

struct CommandMetrics {
  LocalValue calls;
  LocalValue errors;
  LocalHistogram duration;
};

// The figures a shard publishes from its timer. Adding one: a row here and one in
// kShardValueInfo (shard_metrics.cc), then a line in METRICS.md.
enum class ShardValue : size_t {
  kKeys,
  kKeysWithExpiry,
  kUsedBytes,
  kDatasetBytes,
  kMaxBytes,
  kExpiryLagMs,
  kExpiredKeys,
  kEvictedKeys,
  kFragmentedBytes,
  kDefragMoves,
  kConnectedClients,
  kConnectionsReceived,
  kRejectedConnections,
  kCommandsProcessed,
  kNetInputBytes,
  kNetOutputBytes,
  kCrossShardRequests,
  kCrossShardDirectReplies,
  kSocketSystemCalls,
  kKeyspaceHits,
  kKeyspaceMisses,
  kClientOutputBufferBytes,
  kClientQueryBufferBytes,
  kCount,
};

enum class MetricKind { kCounter, kGauge };

struct ShardValueInfo {
  std::string_view name;  // the Prometheus family name
  std::string_view help;
  MetricKind kind;
  double scale;          // multiplies the published value: 0.001 turns milliseconds into seconds
  bool max_over_shards;  // the member's figure is the largest shard's rather than the sum
};

const ShardValueInfo& InfoOf(ShardValue value);

// Per key class figures, published from the timer like ShardValue.
struct KeyClassMetrics {
  LocalValue keys;
  LocalValue bytes;
  LocalValue evicted;
  LocalValue expired;
  LocalValue refused;  // writes refused with OOM: policy none, or nothing evictable left
};

// Replies that send a client elsewhere or ask it to wait (design §2.4, §3.6).
enum class Redirect : size_t { kMoved, kTryAgain, kClusterDown, kBusy, kCount };
inline constexpr std::array<std::string_view, static_cast<size_t>(Redirect::kCount)>
    kRedirectNames = {"moved", "tryagain", "clusterdown", "busy"};

class ShardMetrics {
 public:
  ShardMetrics(size_t command_count, size_t key_class_count);

  // The request path: one call per executed command.
  void CountCommand(size_t command_id, bool error) {
    CommandMetrics& m = commands_[command_id];
    m.calls.Add();
    if (error) m.errors.Add();
  }
  // Only for the sampled commands (kLatencySampleEvery).
  void ObserveDuration(size_t command_id, uint64_t ticks) {
    commands_[command_id].duration.Observe(ticks, bounds_);
  }
  // Counts and times every command (tests, and callers that time their own commands).
  void RecordCommand(size_t command_id, uint64_t ticks, bool error) {
    CountCommand(command_id, error);
    ObserveDuration(command_id, ticks);
  }
  void Publish(ShardValue value, uint64_t v) { values_[static_cast<size_t>(value)].Set(v); }
  void RecordRedirect(Redirect kind) { redirects_[static_cast<size_t>(kind)].Add(); }
  uint64_t redirects(Redirect kind) const { return redirects_[static_cast<size_t>(kind)].Read(); }
  KeyClassMetrics& key_class(size_t index) { return key_classes_[index]; }

  const CommandMetrics& command(size_t id) const { return commands_[id]; }
  size_t command_count() const { return command_count_; }
  uint64_t Read(ShardValue value) const { return values_[static_cast<size_t>(value)].Read(); }
  const KeyClassMetrics& key_class(size_t index) const { return key_classes_[index]; }
  size_t key_class_count() const { return key_class_count_; }

  static const std::array<uint64_t, kLatencyBoundsSeconds.size()>& BoundsInTicks();

 private:
  size_t command_count_;
  size_t key_class_count_;
  std::unique_ptr<CommandMetrics[]> commands_;
  std::unique_ptr<KeyClassMetrics[]> key_classes_;
  std::array<LocalValue, static_cast<size_t>(ShardValue::kCount)> values_;
  std::array<LocalValue, static_cast<size_t>(Redirect::kCount)> redirects_;
  const std::array<uint64_t, kLatencyBoundsSeconds.size()>& bounds_;
};

}  // namespace keep::telemetry
