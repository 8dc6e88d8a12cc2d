// Prints an exposition with every family filled in, for `promtool check metrics` in ctest.
#include <cstdio>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "telemetry/metrics_hub.h"

int main() {
  using keep::telemetry::ShardValue;
  keep::telemetry::MetricsHub hub({"get", "set", "cl.throttle"}, {"default", "session"}, 2);
  for (int s = 0; s < 2; ++s) {
    auto& shard = hub.shard(s);
    shard.RecordCommand(0, 1000, false);
    shard.RecordCommand(2, 5000000, true);
    for (size_t v = 0; v < static_cast<size_t>(ShardValue::kCount); ++v) {
      shard.Publish(static_cast<ShardValue>(v), 10 * (v + 1));
    }
    shard.key_class(1).keys.Set(7);
  }
  auto& up = prometheus::BuildGauge()
                 .Name("keep_cluster_member_up")
                 .Help("Whether this member hears the member (1) or considers it dead (0).")
                 .Register(hub.registry());
  up.Add({{"member", "keep-1"}}).Set(1);
  std::fputs(hub.Render().c_str(), stdout);
  return 0;
}
