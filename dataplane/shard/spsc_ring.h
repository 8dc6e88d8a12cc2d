// A bounded single-producer single-consumer ring of pointers: one per ordered pair of shards
// (design §2.4). The producer and consumer each cache the other's index so the shared cache
// lines are touched only when the cached view runs out.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace keep::shard {

inline constexpr size_t kCacheLine = 64;

template <typename T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity_pow2)
      : mask_(capacity_pow2 - 1), slots_(std::make_unique<T*[]>(capacity_pow2)) {}

  size_t capacity() const { return mask_ + 1; }

  // Producer side. False when full.
  bool Push(T* item) {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - cached_head_ > mask_) {
      cached_head_ = head_.load(std::memory_order_acquire);
      if (tail - cached_head_ > mask_) return false;
    }
    slots_[tail & mask_] = item;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Consumer side. nullptr when empty.
  T* Pop() {
    uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == cached_tail_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head == cached_tail_) return nullptr;
    }
    T* item = slots_[head & mask_];
    head_.store(head + 1, std::memory_order_release);
    return item;
  }

  // Either side; a hint only (the other side may be moving).
  bool Empty() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }

 private:
  const size_t mask_;
  std::unique_ptr<T*[]> slots_;
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;  // consumer's copy
  alignas(kCacheLine) std::atomic<uint64_t> tail_{0};
  uint64_t cached_head_ = 0;  // producer's copy
};

}  // namespace keep::shard
