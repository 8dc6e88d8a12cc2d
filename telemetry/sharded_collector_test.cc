#include "telemetry/sharded_collector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "telemetry/cycle_clock.h"

namespace keep::telemetry {
namespace {

const prometheus::MetricFamily* FindFamily(const std::vector<prometheus::MetricFamily>& families,
                                           std::string_view name) {
  for (const auto& family : families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

TEST(ShardedCollector, SumsShardsAndTakesTheLargestLag) {
  ShardedCollector collector({"get", "set"}, {"default"}, 3);
  for (int s = 0; s < 3; ++s) {
    collector.shard(s).Publish(ShardValue::kKeys, 10 + s);
    collector.shard(s).Publish(ShardValue::kExpiryLagMs, 100 * (s + 1));
  }
  auto families = collector.Collect();
  const auto* keys = FindFamily(families, "keep_keys");
  ASSERT_NE(keys, nullptr);
  EXPECT_EQ(keys->type, prometheus::MetricType::Gauge);
  EXPECT_DOUBLE_EQ(keys->metric.at(0).gauge.value, 33);
  const auto* lag = FindFamily(families, "keep_expiry_lag_seconds");
  ASSERT_NE(lag, nullptr);
  EXPECT_DOUBLE_EQ(lag->metric.at(0).gauge.value, 0.3);
  const auto* shards = FindFamily(families, "keep_shards");
  ASSERT_NE(shards, nullptr);
  EXPECT_DOUBLE_EQ(shards->metric.at(0).gauge.value, 3);
}

TEST(ShardedCollector, CommandsThatNeverRanAreLeftOut) {
  ShardedCollector collector({"get", "set"}, {"default"}, 2);
  collector.shard(0).RecordCommand(1, 10, false);
  collector.shard(1).RecordCommand(1, 10, true);
  auto families = collector.Collect();
  const auto* calls = FindFamily(families, "keep_commands_total");
  ASSERT_NE(calls, nullptr);
  ASSERT_EQ(calls->metric.size(), 1u);
  EXPECT_EQ(calls->metric[0].label.at(0).value, "set");
  EXPECT_DOUBLE_EQ(calls->metric[0].counter.value, 2);
  const auto* errors = FindFamily(families, "keep_command_errors_total");
  ASSERT_NE(errors, nullptr);
  EXPECT_DOUBLE_EQ(errors->metric.at(0).counter.value, 1);
}

TEST(ShardedCollector, HistogramBucketsAreCumulativeAndEndAtTheCount) {
  ShardedCollector collector({"get"}, {"default"}, 1);
  double rate = CycleClock::TicksPerSecond();
  auto ticks = [rate](double seconds) { return static_cast<uint64_t>(seconds * rate); };
  collector.shard(0).RecordCommand(0, ticks(0.5e-6), false);  // first bucket (1 µs)
  collector.shard(0).RecordCommand(0, ticks(3e-3), false);    // 5 ms bucket
  collector.shard(0).RecordCommand(0, ticks(30), false);      // +Inf
  auto families = collector.Collect();
  const auto* duration = FindFamily(families, "keep_command_duration_seconds");
  ASSERT_NE(duration, nullptr);
  const auto& h = duration->metric.at(0).histogram;
  EXPECT_EQ(h.sample_count, 3u);
  ASSERT_EQ(h.bucket.size(), kLatencyBoundsSeconds.size() + 1);
  EXPECT_EQ(h.bucket.front().cumulative_count, 1u);
  for (size_t i = 0; i < h.bucket.size(); ++i) {
    double bound = h.bucket[i].upper_bound;
    uint64_t expected = bound < 3e-3 ? 1 : (std::isinf(bound) ? 3 : 2);
    EXPECT_EQ(h.bucket[i].cumulative_count, expected) << "bound " << bound;
  }
  EXPECT_NEAR(h.sample_sum, 30.0030005, 0.01);
}

TEST(ShardedCollector, KeyClassesAreLabelled) {
  ShardedCollector collector({}, {"default", "session"}, 2);
  collector.shard(0).key_class(1).keys.Set(4);
  collector.shard(1).key_class(1).keys.Set(5);
  collector.shard(1).key_class(0).evicted.Add(3);
  auto families = collector.Collect();
  const auto* keys = FindFamily(families, "keep_class_keys");
  ASSERT_NE(keys, nullptr);
  ASSERT_EQ(keys->metric.size(), 2u);
  EXPECT_EQ(keys->metric[1].label.at(0).name, "class");
  EXPECT_EQ(keys->metric[1].label.at(0).value, "session");
  EXPECT_DOUBLE_EQ(keys->metric[1].gauge.value, 9);
  const auto* evicted = FindFamily(families, "keep_class_evicted_keys_total");
  ASSERT_NE(evicted, nullptr);
  EXPECT_DOUBLE_EQ(evicted->metric[0].counter.value, 3);
}

// The shards write while a scrape reads: values only grow and the histogram's count always
// equals its last bucket (run under TSan/ASan in CI to catch a data race).
TEST(ShardedCollector, ScrapeWhileShardsWrite) {
  ShardedCollector collector({"get"}, {"default"}, 2);
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int s = 0; s < 2; ++s) {
    writers.emplace_back([&, s] {
      uint64_t n = 0;
      while (!stop.load()) {
        collector.shard(s).RecordCommand(0, n % 5000, false);
        collector.shard(s).Publish(ShardValue::kCommandsProcessed, ++n);
      }
    });
  }
  double last = 0;
  for (int i = 0; i < 200; ++i) {
    auto families = collector.Collect();
    const auto* calls = FindFamily(families, "keep_commands_total");
    if (calls == nullptr || calls->metric.empty()) continue;
    double value = calls->metric[0].counter.value;
    EXPECT_GE(value, last);
    last = value;
    const auto* duration = FindFamily(families, "keep_command_duration_seconds");
    ASSERT_NE(duration, nullptr);
    const auto& h = duration->metric.at(0).histogram;
    EXPECT_EQ(h.sample_count, h.bucket.back().cumulative_count);
  }
  stop = true;
  for (auto& t : writers) t.join();
}

}  // namespace
}  // namespace keep::telemetry
