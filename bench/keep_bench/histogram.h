// Log-linear latency histogram in the HDR style: 64 sub-buckets per power of two, so every
// recorded value is kept within 1/64 (1.6%) of its true value, from 1 ns up to 2^63 ns, in a
// fixed 32 KiB table. Recording is a couple of shifts and an increment: no allocation, no
// branches on the value's magnitude beyond one compare, cheap enough for every request.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace keep::bench {

class Histogram {
 public:
  static constexpr int kSubBucketBits = 6;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;
  // Groups 0..57 cover every uint64 below 2^63; values above are clamped.
  static constexpr size_t kBuckets = 64 * kSubBuckets;

  void Record(uint64_t value_ns) {
    if (value_ns > kMaxValue) value_ns = kMaxValue;
    ++counts_[BucketOf(value_ns)];
    ++count_;
    sum_ += value_ns;
    if (value_ns > max_) max_ = value_ns;
    if (value_ns < min_) min_ = value_ns;
  }

  void Merge(const Histogram& other);
  void Reset() { *this = Histogram(); }

  uint64_t Count() const { return count_; }
  uint64_t Max() const { return count_ ? max_ : 0; }
  uint64_t Min() const { return count_ ? min_ : 0; }
  double Mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0; }
  // The value at rank ceil(q * count) (nearest rank, 0 < q <= 1), reported as the highest value
  // its bucket can hold and never above the recorded maximum, so a percentile never understates.
  uint64_t Percentile(double q) const;

  static size_t BucketOf(uint64_t v) {
    // Values below 2 * kSubBuckets are their own bucket; above, drop the low bits that do not fit
    // in the 7 significant bits (the leading 1 and 6 sub-bucket bits) kept per group.
    if (v < 2 * kSubBuckets) return static_cast<size_t>(v);
    int group = 63 - __builtin_clzll(v) - kSubBucketBits;
    return static_cast<size_t>(group) * kSubBuckets + static_cast<size_t>(v >> group);
  }
  static uint64_t BucketLowest(size_t bucket);
  static uint64_t BucketHighest(size_t bucket);

 private:
  static constexpr uint64_t kMaxValue = (uint64_t{1} << 63) - 1;

  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
  uint64_t min_ = ~uint64_t{0};
};

}  // namespace keep::bench
