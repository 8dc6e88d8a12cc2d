#include "telemetry/shard_metrics.h"

#include "telemetry/cycle_clock.h"

namespace keep::telemetry {

namespace {

constexpr std::array<ShardValueInfo, static_cast<size_t>(ShardValue::kCount)> kShardValueInfo = {{
    {"keep_keys", "Keys stored.", MetricKind::kGauge, 1, false},
    {"keep_keys_with_expiry", "Keys that have a time to live.", MetricKind::kGauge, 1, false},
    {"keep_memory_used_bytes",
     "Memory the stores account for: table, records, value arena and connection buffers.",
     MetricKind::kGauge, 1, false},
    {"keep_dataset_bytes", "Bytes of keys and values as clients see them.", MetricKind::kGauge, 1,
     false},
    {"keep_memory_max_bytes", "The memory cap (maxmemory); 0 when there is none.",
     MetricKind::kGauge, 1, true},  // every shard reports the member's cap
    {"keep_expiry_lag_seconds",
     "Age of the oldest expired key still present: how far expiry runs behind (largest shard).",
     MetricKind::kGauge, 0.001, true},
    {"keep_expired_keys_total", "Keys removed because their time to live ran out.",
     MetricKind::kCounter, 1, false},
    {"keep_evicted_keys_total", "Keys removed to stay under the memory cap.", MetricKind::kCounter,
     1, false},
    {"keep_memory_fragmentation_bytes",
     "Free bytes inside the allocator's pages, which active defragmentation gives back.",
     MetricKind::kGauge, 1, false},
    {"keep_active_defrag_hits_total", "Records active defragmentation moved.", MetricKind::kCounter,
     1, false},
    {"keep_connected_clients", "Client connections open.", MetricKind::kGauge, 1, false},
    {"keep_connections_received_total", "Client connections accepted.", MetricKind::kCounter, 1,
     false},
    {"keep_connections_rejected_total", "Client connections refused (maxclients).",
     MetricKind::kCounter, 1, false},
    {"keep_commands_processed_total", "Requests parsed, of every protocol and command.",
     MetricKind::kCounter, 1, false},
    {"keep_net_input_bytes_total", "Bytes read from client connections.", MetricKind::kCounter, 1,
     false},
    {"keep_net_output_bytes_total", "Bytes written to client connections.", MetricKind::kCounter, 1,
     false},
    {"keep_cross_shard_requests_total",
     "Requests forwarded to the shard that owns their key (one hop over an SPSC ring).",
     MetricKind::kCounter, 1, false},
    {"keep_cross_shard_direct_replies_total",
     "Forwarded requests whose owning shard wrote the reply to the client itself (no return hop).",
     MetricKind::kCounter, 1, false},
    {"keep_socket_system_calls_total",
     "System calls that made client socket reads and writes (one per turn's batch on io_uring).",
     MetricKind::kCounter, 1, false},
    {"keep_keyspace_hits_total", "Lookups that found their key.", MetricKind::kCounter, 1, false},
    {"keep_keyspace_misses_total", "Lookups that did not find their key.", MetricKind::kCounter, 1,
     false},
    {"keep_client_output_buffer_bytes", "Bytes held in client output buffers.", MetricKind::kGauge,
     1, false},
    {"keep_client_query_buffer_bytes", "Bytes held in client input buffers.", MetricKind::kGauge, 1,
     false},
}};

}  // namespace

const ShardValueInfo& InfoOf(ShardValue value) {
  return kShardValueInfo[static_cast<size_t>(value)];
}

const std::array<uint64_t, kLatencyBoundsSeconds.size()>& ShardMetrics::BoundsInTicks() {
  static const std::array<uint64_t, kLatencyBoundsSeconds.size()> bounds = [] {
    std::array<uint64_t, kLatencyBoundsSeconds.size()> ticks{};
    double rate = CycleClock::TicksPerSecond();
    for (size_t i = 0; i < ticks.size(); ++i) {
      ticks[i] = static_cast<uint64_t>(kLatencyBoundsSeconds[i] * rate);
    }
    return ticks;
  }();
  return bounds;
}

ShardMetrics::ShardMetrics(size_t command_count, size_t key_class_count)
    : command_count_(command_count),
      key_class_count_(key_class_count),
      commands_(new CommandMetrics[command_count]),
      key_classes_(new KeyClassMetrics[key_class_count]),
      bounds_(BoundsInTicks()) {}

}  // namespace keep::telemetry
