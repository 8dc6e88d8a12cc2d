// Sums the shards' single-writer metrics into Prometheus families at scrape time (design §4).
// Runs on the scraping thread; reads only relaxed atomics the shards write.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "telemetry/shard_metrics.h"

namespace keep::telemetry {

class ShardedCollector : public prometheus::Collectable {
 public:
  ShardedCollector(std::vector<std::string> command_names, std::vector<std::string> key_class_names,
                   int shard_count);

  ShardMetrics& shard(int index) { return *shards_[static_cast<size_t>(index)]; }
  int shard_count() const { return static_cast<int>(shards_.size()); }
  const std::vector<std::string>& command_names() const { return command_names_; }

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  void CollectCommands(std::vector<prometheus::MetricFamily>* out) const;
  void CollectShardValues(std::vector<prometheus::MetricFamily>* out) const;
  void CollectKeyClasses(std::vector<prometheus::MetricFamily>* out) const;

  std::vector<std::string> command_names_;
  std::vector<std::string> key_class_names_;
  std::vector<std::unique_ptr<ShardMetrics>> shards_;
};

}  // namespace keep::telemetry
