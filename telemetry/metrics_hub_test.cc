#include "telemetry/metrics_hub.h"

#include <gtest/gtest.h>

#include <prometheus/counter.h>

namespace keep::telemetry {
namespace {

TEST(MetricsHub, RendersShardControlAndProcessMetricsWithHelp) {
  MetricsHub hub({"get"}, {"default"}, 1);
  hub.shard(0).RecordCommand(0, 100, false);
  hub.shard(0).Publish(ShardValue::kConnectedClients, 3);
  auto& heartbeats = prometheus::BuildCounter()
                         .Name("keep_cluster_heartbeats_sent_total")
                         .Help("Heartbeats sent to other members.")
                         .Register(hub.registry());
  heartbeats.Add({}).Increment(5);
  std::string text = hub.Render();
  EXPECT_NE(text.find("# HELP keep_connected_clients Client connections open."), std::string::npos);
  EXPECT_NE(text.find("# TYPE keep_connected_clients gauge\nkeep_connected_clients 3"),
            std::string::npos);
  EXPECT_NE(text.find("keep_commands_total{command=\"get\"} 1"), std::string::npos);
  EXPECT_NE(text.find("keep_command_duration_seconds_bucket{command=\"get\",le=\"+Inf\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("keep_cluster_heartbeats_sent_total 5"), std::string::npos);
  EXPECT_NE(text.find("process_resident_memory_bytes "), std::string::npos);
  EXPECT_NE(text.find("process_open_fds "), std::string::npos);
}

TEST(MetricsHub, WithoutShardsOnlyTheRegistryAndTheProcess) {
  MetricsHub hub;
  std::string text = hub.Render();
  EXPECT_EQ(text.find("keep_keys"), std::string::npos);
  EXPECT_NE(text.find("process_cpu_seconds_total"), std::string::npos);
}

}  // namespace
}  // namespace keep::telemetry
