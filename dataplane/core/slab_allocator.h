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

  // Free space inside the pages the classes hold (excluding the never-used tails of the pages
  // they allocate from): what freeing scattered objects left behind, and what moving objects
  // (Drain) can give back to the pool of empty pages.
  size_t fragmented_bytes() const;
  // At least fragmented_bytes() (it counts the tails too), in constant time: when this is small,
  // so is the fragmentation.
  size_t fragmented_bytes_bound() const {
    const size_t capacity = class_pages_ * kPageSize;
    return capacity > live_bytes_ ? capacity - live_bytes_ : 0;
  }
  // Empties sparse pages by handing their live objects to `move(void* object, size_t size)`,
  // which moves the object (Allocate `size`, copy, Free the old one) or leaves it (it is not the
  // caller's to move: the caller must recognise its objects, e.g. by a lookup, since an object
  // freed after the page was chosen is handed out too). A page worth emptying belongs to a
  // class with at least two pages and a 32nd of its capacity free, and is the least used of the
  // first 512 pages of the class's list of pages with free objects; it is taken off that list,
  // so the moves fill other pages. At most `budget` objects are handed out per call; a page is
  // finished over later calls. Returns false when no class is worth it.
  template <class F>
  bool Drain(size_t budget, F&& move);

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
    uint8_t klass = 0;   // the class the page serves while it is not empty
    bool stuck = false;  // Drain left objects in it: not chosen again until it is emptied
  };
  static constexpr size_t kDescriptorBytes = 4096;
  static_assert(sizeof(Page) * kPagesPerChunk <= kDescriptorBytes);

  struct Class {
    Page* current = nullptr;  // where allocation happens; never on the list
    Page* partial = nullptr;  // other pages with free objects
    uint32_t size = 0;
    size_t live = 0;
    size_t pages = 0;  // pages serving the class, the current one included
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
  static uint8_t* FirstObject(Page* page);
  bool BeginDrain();
  void EndDrain();

  ChunkPool* pool_;
  std::array<Class, kClassCount> classes_;
  std::vector<Page*> empty_pages_;
  size_t class_pages_ = 0;  // pages serving some class
  // The page Drain is emptying: off its class's list but marked listed, so frees leave it off.
  Page* draining_ = nullptr;
  size_t drain_next_ = 0;                                         // next object index to hand out
  std::array<uint64_t, kPageSize / kMinSize / 64> drain_free_{};  // objects free when it began
  size_t drain_class_cursor_ = 0;
  size_t next_page_ = kPagesPerChunk;  // next never-used page of the last chunk
  std::vector<void*> chunks_;
  size_t live_bytes_ = 0;
};

template <class F>
bool SlabAllocator::Drain(size_t budget, F&& move) {
  while (budget > 0) {
    if (draining_ == nullptr && !BeginDrain()) return false;
    Page* page = draining_;
    const size_t size = classes_[page->klass].size;
    uint8_t* first = FirstObject(page);
    const size_t count = static_cast<size_t>(page->bump - first) / size;
    // Frees of the page's last object (by a move or otherwise) end the drain (draining_ resets).
    while (draining_ == page && drain_next_ < count && budget > 0) {
      const size_t i = drain_next_++;
      if (drain_free_[i / 64] & (uint64_t{1} << (i % 64))) continue;
      --budget;
      move(first + i * size, size);
    }
    if (draining_ == page && drain_next_ >= count) EndDrain();
  }
  return true;
}

}  // namespace keep::core
