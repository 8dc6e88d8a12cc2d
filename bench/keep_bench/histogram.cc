#include "bench/keep_bench/histogram.h"

#include <algorithm>
#include <cmath>

namespace keep::bench {

void Histogram::Merge(const Histogram& other) {
  for (size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
  min_ = std::min(min_, other.min_);
}

uint64_t Histogram::BucketLowest(size_t bucket) {
  if (bucket < 2 * kSubBuckets) return bucket;
  size_t group = bucket / kSubBuckets - 1;
  uint64_t mantissa = bucket - group * kSubBuckets;
  return mantissa << group;
}

uint64_t Histogram::BucketHighest(size_t bucket) {
  if (bucket < 2 * kSubBuckets) return bucket;
  size_t group = bucket / kSubBuckets - 1;
  uint64_t mantissa = bucket - group * kSubBuckets;
  return ((mantissa + 1) << group) - 1;
}

uint64_t Histogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(BucketHighest(i), max_);
  }
  return max_;
}

}  // namespace keep::bench
