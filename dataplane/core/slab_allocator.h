// A size-class allocator for small objects (records, table blocks) with no per-object header: the
// caller passes the size back to Free, which a record can always recompute from its own header.
//
// Classes are fine-grained where records are common (every byte from 8 to 64, then 16 classes per
// doubling up to 2 KiB), because a record rounded up to an 8-byte class would cost a small key
// several percent of its memory. Each class carves 32 KiB pages taken from 2 MiB chunks of the
// ChunkPool; a freed object goes on its class's free list (the link lives in the object itself)
// and is reused first, which also keeps recently touched memory hot. Objects are not aligned
// beyond what their size implies (a class size that is a multiple of 16 gives 16-byte alignment).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dataplane/core/chunk_pool.h"

namespace keep::core {

namespace slab_detail {
inline constexpr size_t kMaxSize = 2048;
inline constexpr size_t kClassCount = 57 + 5 * 16;

constexpr std::array<uint32_t, kClassCount> MakeClassSizes() {
  std::array<uint32_t, kClassCount> sizes{};
  size_t n = 0;
  for (uint32_t s = 8; s <= 64; ++s) sizes[n++] = s;
  for (uint32_t base = 64; base < kMaxSize; base *= 2) {
    for (uint32_t i = 1; i <= 16; ++i) sizes[n++] = base + i * (base / 16);
  }
  return sizes;
}

constexpr std::array<uint8_t, kMaxSize + 1> MakeClassIndex() {
  std::array<uint8_t, kMaxSize + 1> index{};
  auto sizes = MakeClassSizes();
  size_t c = 0;
  for (size_t s = 0; s <= kMaxSize; ++s) {
    while (sizes[c] < s) ++c;
    index[s] = static_cast<uint8_t>(c);
  }
  return index;
}

inline constexpr std::array<uint32_t, kClassCount> kClassSizes = MakeClassSizes();
inline constexpr std::array<uint8_t, kMaxSize + 1> kClassIndex = MakeClassIndex();
static_assert(kClassSizes[kClassCount - 1] == kMaxSize);
}  // namespace slab_detail

class SlabAllocator {
 public:
  static constexpr size_t kMaxSize = slab_detail::kMaxSize;
  static constexpr size_t kMinSize = 8;  // room for the free-list link
  static constexpr size_t kPageSize = size_t{32} << 10;
  static constexpr size_t kClassCount = slab_detail::kClassCount;

  explicit SlabAllocator(ChunkPool* pool);
  ~SlabAllocator();
  SlabAllocator(const SlabAllocator&) = delete;
  SlabAllocator& operator=(const SlabAllocator&) = delete;

  // `size` in [1, kMaxSize].
  void* Allocate(size_t size) {
    Class& c = classes_[ClassOf(size)];
    ++c.live;
    live_bytes_ += c.size;
    if (c.free != nullptr) {
      void* p = c.free;
      std::memcpy(&c.free, p, sizeof(void*));
      return p;
    }
    if (c.end - c.bump >= static_cast<ptrdiff_t>(c.size)) {
      void* p = c.bump;
      c.bump += c.size;
      return p;
    }
    return Refill(c);
  }

  void Free(void* p, size_t size) {
    Class& c = classes_[ClassOf(size)];
    --c.live;
    live_bytes_ -= c.size;
    std::memcpy(p, &c.free, sizeof(void*));
    c.free = static_cast<uint8_t*>(p);
  }

  static size_t ClassOf(size_t size) { return slab_detail::kClassIndex[size]; }
  static size_t ClassSize(size_t size) { return slab_detail::kClassSizes[ClassOf(size)]; }

  // Returns every page to the pool (all objects become invalid).
  void Reset();

  // Bytes of live objects, counted at their class size.
  size_t live_bytes() const { return live_bytes_; }
  size_t live_objects() const;
  size_t chunk_count() const { return chunks_.size(); }

 private:
  struct Class {
    uint8_t* free = nullptr;
    uint8_t* bump = nullptr;
    uint8_t* end = nullptr;
    uint32_t size = 0;
    size_t live = 0;
  };

  void* Refill(Class& c);

  ChunkPool* pool_;
  std::array<Class, kClassCount> classes_;
  uint8_t* chunk_bump_ = nullptr;
  uint8_t* chunk_end_ = nullptr;
  std::vector<void*> chunks_;
  size_t live_bytes_ = 0;
};

}  // namespace keep::core
