#include "telemetry/metrics_hub.h"

#include <prometheus/text_serializer.h>

#include "telemetry/process_collector.h"

namespace keep::telemetry {

MetricsHub::MetricsHub(std::vector<std::string> command_names,
                       std::vector<std::string> key_class_names, int shard_count)
    : shards_(std::make_shared<ShardedCollector>(std::move(command_names),
                                                 std::move(key_class_names), shard_count)),
      registry_(std::make_shared<prometheus::Registry>()) {
  collectables_.push_back(std::make_shared<ProcessCollector>());
}

void MetricsHub::Add(std::shared_ptr<prometheus::Collectable> collectable) {
  collectables_.push_back(std::move(collectable));
}

std::vector<prometheus::MetricFamily> MetricsHub::Collect() const {
  std::vector<prometheus::MetricFamily> families;
  if (shards_->shard_count() > 0) families = shards_->Collect();
  for (auto& family : registry_->Collect()) families.push_back(std::move(family));
  for (const auto& collectable : collectables_) {
    for (auto& family : collectable->Collect()) families.push_back(std::move(family));
  }
  return families;
}

std::string MetricsHub::Render() const { return prometheus::TextSerializer().Serialize(Collect()); }

}  // namespace keep::telemetry
