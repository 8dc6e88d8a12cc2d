// One process's metrics: the shards' single-writer cells, the control plane's metrics (written
// with prometheus-cpp's own thread-safe types: they are off the request path), the process
// metrics, and the text exposition served at GET /metrics (design §4).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/registry.h>

#include "telemetry/sharded_collector.h"

namespace keep::telemetry {

class MetricsHub {
 public:
  // A hub with no shards (keep-operator) still has the registry and the process metrics.
  MetricsHub(std::vector<std::string> command_names, std::vector<std::string> key_class_names,
             int shard_count);
  MetricsHub() : MetricsHub({}, {}, 0) {}

  ShardMetrics& shard(int index) { return shards_->shard(index); }
  // For metrics of the control thread, the cluster, handoff, or the operator.
  prometheus::Registry& registry() { return *registry_; }
  void Add(std::shared_ptr<prometheus::Collectable> collectable);

  std::vector<prometheus::MetricFamily> Collect() const;
  // Prometheus text format 0.0.4 (Content-Type "text/plain; version=0.0.4; charset=utf-8").
  std::string Render() const;

 private:
  std::shared_ptr<ShardedCollector> shards_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
};

inline constexpr char kExpositionContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace keep::telemetry
