// The shards of one process and what they share: the rings between every ordered pair, the
// client-count limit, the configuration view, and the stop protocol. Nothing here is touched on
// the key path except the rings.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dataplane/cluster/view.h"
#include "dataplane/commands/shard_services.h"
#include "dataplane/core/chunk_prefaulter.h"
#include "dataplane/core/slot.h"
#include "dataplane/shard/shard.h"
#include "dataplane/shard/spsc_ring.h"
#include "dataplane/shard/task_channel.h"
#include "telemetry/metrics_hub.h"

namespace keep::shard {

inline constexpr size_t kRingCapacity = 4096;

class ShardGroup {
 public:
  // `shard_options` has one entry per shard.
  ShardGroup(std::vector<ShardOptions> shard_options, core::SlotFunction slot_function,
             commands::ServerFacts facts, std::map<std::string, std::string> config_view,
             int64_t maxclients);
  ~ShardGroup();

  void Start();
  // Stop accepting, finish and send every reply already owed, then let the threads end.
  void RequestStop();
  void Wait();

  int count() const { return static_cast<int>(shards_.size()); }
  Shard& shard(int i) { return *shards_[i]; }
  SpscRing<Envelope>& ring(int from, int to) { return *rings_[from * count() + to]; }
  const core::SlotFunction& slot_function() const { return slot_function_; }
  // Cluster mode: where shards read the current view (nullptr on a single node). Set before
  // Start; the publisher outlives the shards.
  void set_views(cluster::ViewPublisher* views) { views_ = views; }
  cluster::ViewPublisher* views() const { return views_; }

  // Control thread → shard tasks (task_channel.h). Attach the control io_context first.
  TaskChannel& tasks() { return *tasks_; }
  template <class Fn, class Done>
  void SubmitTo(int shard, Fn fn, Done done) {
    tasks_->SubmitTo(shard, std::move(fn), std::move(done));
  }
  const commands::ServerFacts& facts() const { return facts_; }
  // The process's metrics: each shard writes its own cells; the admin endpoint renders them.
  telemetry::MetricsHub& metrics() { return metrics_; }
  // Faults in fresh memory for the shards' stores (chunk_prefaulter.h).
  core::ChunkPrefaulter& prefaulter() { return prefaulter_; }

  // Admission of a new connection; false when maxclients is reached.
  bool AdmitClient();
  void ReleaseClient() { connected_clients_.fetch_sub(1, std::memory_order_relaxed); }
  uint64_t NextClientId() { return next_client_id_.fetch_add(1, std::memory_order_relaxed); }

  bool stop_requested() const { return stop_requested_.load(std::memory_order_acquire); }
  void ReportDrained() { drained_.fetch_add(1, std::memory_order_acq_rel); }
  bool AllDrained() const { return drained_.load(std::memory_order_acquire) == count(); }

  // Called by a shard on SHUTDOWN; the process wiring decides what it means.
  std::function<void()> on_shutdown_request;

  // CONFIG GET/SET over the process-wide view (mutations are rare admin operations).
  void ConfigGet(std::string_view pattern, std::vector<std::pair<std::string, std::string>>* out);
  std::string ConfigSet(std::string_view name, std::string_view value);
  int64_t maxclients() const { return maxclients_.load(std::memory_order_relaxed); }
  int64_t timeout_seconds() const { return timeout_seconds_.load(std::memory_order_relaxed); }
  // --maxmemory (CONFIG SET maxmemory) split evenly across the shards; 0: no cap.
  void set_maxmemory(int64_t bytes) { maxmemory_.store(bytes, std::memory_order_relaxed); }
  int64_t maxmemory() const { return maxmemory_.load(std::memory_order_relaxed); }
  size_t maxmemory_share() const {
    return static_cast<size_t>(maxmemory_.load(std::memory_order_relaxed)) /
           static_cast<size_t>(std::max(1, shard_count_));
  }

 private:
  telemetry::MetricsHub metrics_;
  core::ChunkPrefaulter prefaulter_;  // before the shards: their stores take chunks from it
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::unique_ptr<SpscRing<Envelope>>> rings_;
  std::unique_ptr<TaskChannel> tasks_;
  core::SlotFunction slot_function_;
  cluster::ViewPublisher* views_ = nullptr;
  commands::ServerFacts facts_;
  std::atomic<int64_t> connected_clients_{0};
  std::atomic<uint64_t> next_client_id_{1};
  std::atomic<bool> stop_requested_{false};
  std::atomic<int> drained_{0};
  std::atomic<int64_t> maxclients_;
  std::atomic<int64_t> timeout_seconds_{0};
  std::atomic<int64_t> maxmemory_{0};
  int shard_count_ = 1;
  std::mutex config_mutex_;
  std::map<std::string, std::string> config_view_;
};

}  // namespace keep::shard
