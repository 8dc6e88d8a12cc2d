// A size-class allocator for small objects (records, table blocks) with no per-object header: the
// caller passes the size back to Free, which a record can always recompute from its own header.
//
// Classes are fine-grained where records are common (every byte from 8 to 64, then 16 classes per
// doubling up to 2 KiB), because a record rounded up to an 8-byte class would cost a small key
// several percent of its memory. Memory comes in 2 MiB chunks from the ChunkPool, cut into 32 KiB
// pages; each page serves one class at a time and keeps its own free list and live count in a
// small descriptor at the start of its chunk (found from an object's address by masking), so:
//   - a freed object goes back to its page and is reused first (recently touched memory is hot);
//   - a page whose last object is freed goes back to a pool of empty pages that every class
//     draws from, so memory freed by one size class serves the others (without this, a workload
//     whose record sizes drift, e.g. keys one digit longer, would calcify pages in the old
//     classes and grow without bound under eviction).
// Objects are not aligned beyond what their size implies.
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
  static constexpr size_t kPagesPerChunk = ChunkPool::kChunkSize / kPageSize;
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
    if (Page* page = c.current; page != nullptr) {
      if (page->free != nullptr) {
        void* p = page->free;
        std::memcpy(&page->free, p, sizeof(void*));
        ++page->live;
        return p;
      }
      if (page->end - page->bump >= static_cast<ptrdiff_t>(c.size)) {
        void* p = page->bump;
        page->bump += c.size;
        ++page->live;
        return p;
      }
    }
    return Refill(c);
  }

  void Free(void* p, size_t size) {
    Class& c = classes_[ClassOf(size)];
    --c.live;
    live_bytes_ -= c.size;
    Page* page = PageOf(p);
    std::memcpy(p, &page->free, sizeof(void*));
    page->free = static_cast<uint8_t*>(p);
    --page->live;
    if (page != c.current) OnFreeInOtherPage(c, page);
  }

  static size_t ClassOf(size_t size) { return slab_detail::kClassIndex[size]; }
  static size_t ClassSize(size_t size) { return slab_detail::kClassSizes[ClassOf(size)]; }

  // Returns every page to the pool (all objects become invalid).
  void Reset();

  // Bytes of live objects, counted at their class size.
  size_t live_bytes() const { return live_bytes_; }
  size_t live_objects() const;
  size_t chunk_count() const { return chunks_.size(); }
  // Empty pages waiting for any class.
  size_t empty_pages() const { return empty_pages_.size(); }

 private:
  // One page's descriptor; the descriptors of a chunk's pages sit at the chunk's start.
  struct Page {
    uint8_t* free = nullptr;  // this page's free objects
    uint8_t* bump = nullptr;  // first never-used byte
    uint8_t* end = nullptr;
    Page* prev = nullptr;  // the class's list of pages with free objects
    Page* next = nullptr;
    uint32_t live = 0;
    bool listed = false;
  };
  static constexpr size_t kDescriptorBytes = 4096;
  static_assert(sizeof(Page) * kPagesPerChunk <= kDescriptorBytes);

  struct Class {
    Page* current = nullptr;  // where allocation happens; never on the list
    Page* partial = nullptr;  // other pages with free objects
    uint32_t size = 0;
    size_t live = 0;
  };

  static Page* PageOf(const void* p) {
    auto address = reinterpret_cast<uintptr_t>(p);
    auto* pages = reinterpret_cast<Page*>(address & ~(uintptr_t{ChunkPool::kChunkSize} - 1));
    return &pages[(address & (ChunkPool::kChunkSize - 1)) / kPageSize];
  }

  void* Refill(Class& c);
  void OnFreeInOtherPage(Class& c, Page* page);
  Page* NewPage();
  static void Unlink(Class& c, Page* page);

  ChunkPool* pool_;
  std::array<Class, kClassCount> classes_;
  std::vector<Page*> empty_pages_;
  size_t next_page_ = kPagesPerChunk;  // next never-used page of the last chunk
  std::vector<void*> chunks_;
  size_t live_bytes_ = 0;
};

}  // namespace keep::core
