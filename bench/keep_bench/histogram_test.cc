#include "bench/keep_bench/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace keep::bench {
namespace {

// The nearest-rank percentile of the sorted reference.
uint64_t Reference(const std::vector<uint64_t>& sorted, double q) {
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

void ExpectClose(uint64_t got, uint64_t want) {
  // Reported as the bucket's highest value: never below the truth, above by at most 1/64.
  EXPECT_GE(got, want);
  EXPECT_LE(static_cast<double>(got), static_cast<double>(want) * (1 + 1.0 / 64) + 1)
      << "want " << want;
}

TEST(HistogramTest, BucketsRoundTripAndAreOrdered) {
  for (uint64_t v : {0ull, 1ull, 63ull, 127ull, 128ull, 129ull, 255ull, 256ull, 1000ull,
                     123456789ull, (1ull << 40) + 12345, (1ull << 63) - 1}) {
    size_t b = Histogram::BucketOf(v);
    ASSERT_LT(b, Histogram::kBuckets);
    EXPECT_LE(Histogram::BucketLowest(b), v);
    EXPECT_GE(Histogram::BucketHighest(b), v);
  }
  for (size_t b = 1; b < Histogram::BucketOf((1ull << 63) - 1); ++b) {
    ASSERT_EQ(Histogram::BucketLowest(b), Histogram::BucketHighest(b - 1) + 1) << b;
  }
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(0.5), 50u);
  EXPECT_EQ(h.Percentile(0.99), 99u);
  EXPECT_EQ(h.Percentile(1.0), 100u);
  EXPECT_EQ(h.Max(), 100u);
  EXPECT_EQ(h.Min(), 1u);
  EXPECT_DOUBLE_EQ(h.Mean(), 50.5);
}

TEST(HistogramTest, PercentilesMatchSortedReference) {
  std::mt19937_64 rng(42);
  // Latency-like: log-normal around 50 us with a long tail, in ns.
  std::lognormal_distribution<double> dist(std::log(50'000.0), 1.0);
  std::vector<uint64_t> values;
  Histogram h;
  for (int i = 0; i < 200'000; ++i) {
    auto v = static_cast<uint64_t>(dist(rng));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999, 0.9999}) {
    SCOPED_TRACE(q);
    ExpectClose(h.Percentile(q), Reference(values, q));
  }
  EXPECT_EQ(h.Max(), values.back());
  EXPECT_EQ(h.Percentile(1.0), values.back());
  EXPECT_EQ(h.Count(), values.size());
}

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(7);
  Histogram a, b, all;
  for (int i = 0; i < 10000; ++i) {
    uint64_t v = rng() % 10'000'000;
    (i % 3 ? a : b).Record(v);
    all.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.Count(), all.Count());
  EXPECT_EQ(a.Max(), all.Max());
  EXPECT_EQ(a.Min(), all.Min());
  for (double q : {0.1, 0.5, 0.99, 0.999}) EXPECT_EQ(a.Percentile(q), all.Percentile(q));
}

TEST(HistogramTest, EmptyAndHugeValues) {
  Histogram h;
  EXPECT_EQ(h.Percentile(0.99), 0u);
  EXPECT_EQ(h.Max(), 0u);
  h.Record(~0ull);                       // clamped, not out of range
  h.Record(60ull * 60 * 1'000'000'000);  // an hour in ns
  EXPECT_EQ(h.Count(), 2u);
  ExpectClose(h.Percentile(0.5), 60ull * 60 * 1'000'000'000);
}

}  // namespace
}  // namespace keep::bench
