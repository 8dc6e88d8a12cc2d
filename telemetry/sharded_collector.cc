#include "telemetry/sharded_collector.h"

#include <algorithm>
#include <limits>

#include "telemetry/cycle_clock.h"

namespace keep::telemetry {

namespace {

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

prometheus::ClientMetric Labelled(std::string_view label, std::string_view value) {
  prometheus::ClientMetric metric;
  metric.label.push_back({std::string(label), std::string(value)});
  return metric;
}

}  // namespace

ShardedCollector::ShardedCollector(std::vector<std::string> command_names,
                                   std::vector<std::string> key_class_names, int shard_count)
    : command_names_(std::move(command_names)), key_class_names_(std::move(key_class_names)) {
  for (int i = 0; i < shard_count; ++i) {
    shards_.push_back(
        std::make_unique<ShardMetrics>(command_names_.size(), key_class_names_.size()));
  }
}

std::vector<prometheus::MetricFamily> ShardedCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  CollectShardValues(&out);
  CollectKeyClasses(&out);
  CollectCommands(&out);
  return out;
}

void ShardedCollector::CollectShardValues(std::vector<prometheus::MetricFamily>* out) const {
  for (size_t v = 0; v < static_cast<size_t>(ShardValue::kCount); ++v) {
    const ShardValueInfo& info = InfoOf(static_cast<ShardValue>(v));
    uint64_t total = 0;
    for (const auto& shard : shards_) {
      uint64_t x = shard->Read(static_cast<ShardValue>(v));
      total = info.max_over_shards ? std::max(total, x) : total + x;
    }
    double value = static_cast<double>(total) * info.scale;
    bool counter = info.kind == MetricKind::kCounter;
    auto family = Family(std::string(info.name), std::string(info.help),
                         counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge);
    prometheus::ClientMetric metric;
    if (counter) {
      metric.counter.value = value;
    } else {
      metric.gauge.value = value;
    }
    family.metric.push_back(std::move(metric));
    out->push_back(std::move(family));
  }
  auto shards =
      Family("keep_shards", "Shard threads of this member.", prometheus::MetricType::Gauge);
  prometheus::ClientMetric metric;
  metric.gauge.value = static_cast<double>(shards_.size());
  shards.metric.push_back(std::move(metric));
  out->push_back(std::move(shards));

  auto redirects = Family("keep_redirects_total",
                          "Replies that redirect or hold off a client, by type: MOVED, TRYAGAIN, "
                          "CLUSTERDOWN (RESP) and their binary statuses, and Busy.",
                          prometheus::MetricType::Counter);
  for (size_t r = 0; r < kRedirectNames.size(); ++r) {
    uint64_t total = 0;
    for (const auto& shard : shards_) total += shard->redirects(static_cast<Redirect>(r));
    auto labelled = Labelled("type", kRedirectNames[r]);
    labelled.counter.value = static_cast<double>(total);
    redirects.metric.push_back(std::move(labelled));
  }
  out->push_back(std::move(redirects));
}

void ShardedCollector::CollectKeyClasses(std::vector<prometheus::MetricFamily>* out) const {
  auto keys =
      Family("keep_class_keys", "Keys stored, by key class.", prometheus::MetricType::Gauge);
  auto bytes = Family("keep_class_memory_bytes", "Memory of records and values, by key class.",
                      prometheus::MetricType::Gauge);
  auto evicted = Family("keep_class_evicted_keys_total",
                        "Keys evicted to stay under the memory cap, by key class.",
                        prometheus::MetricType::Counter);
  auto expired = Family("keep_class_expired_keys_total",
                        "Keys removed because their time to live ran out, by key class.",
                        prometheus::MetricType::Counter);
  auto refused =
      Family("keep_class_eviction_refused_total",
             "Writes refused with OOM because the class may not be evicted (policy none) "
             "or nothing evictable was left, by key class.",
             prometheus::MetricType::Counter);
  for (size_t c = 0; c < key_class_names_.size(); ++c) {
    uint64_t k = 0, b = 0, ev = 0, ex = 0, rf = 0;
    for (const auto& shard : shards_) {
      const KeyClassMetrics& m = shard->key_class(c);
      k += m.keys.Read();
      b += m.bytes.Read();
      ev += m.evicted.Read();
      ex += m.expired.Read();
      rf += m.refused.Read();
    }
    auto metric = Labelled("class", key_class_names_[c]);
    metric.gauge.value = static_cast<double>(k);
    keys.metric.push_back(metric);
    metric.gauge.value = static_cast<double>(b);
    bytes.metric.push_back(metric);
    metric.gauge.value = 0;
    metric.counter.value = static_cast<double>(ev);
    evicted.metric.push_back(metric);
    metric.counter.value = static_cast<double>(ex);
    expired.metric.push_back(metric);
    metric.counter.value = static_cast<double>(rf);
    refused.metric.push_back(metric);
  }
  out->push_back(std::move(keys));
  out->push_back(std::move(bytes));
  out->push_back(std::move(evicted));
  out->push_back(std::move(expired));
  out->push_back(std::move(refused));
}

void ShardedCollector::CollectCommands(std::vector<prometheus::MetricFamily>* out) const {
  auto calls = Family("keep_commands_total", "Commands executed, by command.",
                      prometheus::MetricType::Counter);
  auto errors = Family("keep_command_errors_total", "Commands that answered an error, by command.",
                       prometheus::MetricType::Counter);
  auto duration = Family("keep_command_duration_seconds",
                         "Time a command spends executing on its owning shard, by command (one "
                         "command in 16 per shard is timed).",
                         prometheus::MetricType::Histogram);
  double seconds_per_tick = 1.0 / CycleClock::TicksPerSecond();
  for (size_t id = 0; id < command_names_.size(); ++id) {
    uint64_t n = 0, e = 0, sum = 0;
    std::array<uint64_t, LocalHistogram::kBuckets> buckets{};
    for (const auto& shard : shards_) {
      const CommandMetrics& m = shard->command(id);
      n += m.calls.Read();
      e += m.errors.Read();
      sum += m.duration.sum_ticks();
      for (size_t b = 0; b < buckets.size(); ++b) buckets[b] += m.duration.count(b);
    }
    // Like Redis's commandstats: only commands that ran, so a scrape stays small.
    if (n == 0) continue;
    auto metric = Labelled("command", command_names_[id]);
    metric.counter.value = static_cast<double>(n);
    calls.metric.push_back(metric);
    metric.counter.value = static_cast<double>(e);
    errors.metric.push_back(metric);
    metric.counter.value = 0;
    uint64_t cumulative = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      cumulative += buckets[b];
      double bound = b < kLatencyBoundsSeconds.size() ? kLatencyBoundsSeconds[b]
                                                      : std::numeric_limits<double>::infinity();
      metric.histogram.bucket.push_back({cumulative, bound});
    }
    // The histogram's count is its +Inf bucket: a scrape racing the shard stays consistent.
    metric.histogram.sample_count = cumulative;
    metric.histogram.sample_sum = static_cast<double>(sum) * seconds_per_tick;
    duration.metric.push_back(std::move(metric));
  }
  out->push_back(std::move(calls));
  out->push_back(std::move(errors));
  out->push_back(std::move(duration));
}

}  // namespace keep::telemetry
