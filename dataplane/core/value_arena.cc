#include "dataplane/core/value_arena.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace keep::core {

struct ValueArena::ChunkHeader {
  uint8_t* free;  // free-list head inside this chunk
  ChunkHeader* prev;
  ChunkHeader* next;
  uint32_t bump;  // offset of the first never-used byte
  uint32_t live;
  uint32_t class_index;
  uint32_t capacity;    // objects that fit
  uint32_t list_index;  // position in chunks_
  bool linked;          // on its class's partial list
};

namespace {
constexpr size_t kHeaderBytes = 64;
static_assert(kHeaderBytes >= sizeof(ValueArena::kMinClass));

uint8_t* ChunkBase(void* p) {
  return reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(p) &
                                    ~(uintptr_t{ChunkPool::kChunkSize} - 1));
}
}  // namespace

ValueArena::ValueArena(ChunkPool* pool) : pool_(pool) {
  for (size_t i = 0; i < kClassCount; ++i) {
    size_t doubling = i / 4;
    size_t step = i % 4;
    classes_[i].size = static_cast<uint32_t>((kMinClass << doubling) / 4 * (4 + step));
  }
  // Index 40 is 1 MiB exactly (the loop above gives 1024 << 10 for i = 40).
}

ValueArena::~ValueArena() { Reset(); }

size_t ValueArena::ClassIndex(size_t size) {
  if (size <= kMinClass) return 0;
  // Four classes per doubling: find the doubling, then the quarter above it.
  size_t doubling = std::bit_width(size - 1) - 1;  // floor(log2(size - 1))
  size_t base = size_t{1} << doubling;
  size_t quarter = ((size - 1 - base) * 4) / base;  // 0..3
  size_t index = (doubling - 10) * 4 + quarter + 1;
  return index;
}

size_t ValueArena::ClassSize(size_t size) {
  if (size > kLargeSize) return ChunkPool::LargeSize(size);
  if (size <= kMinClass) return kMinClass;
  size_t doubling = std::bit_width(size - 1) - 1;
  size_t base = size_t{1} << doubling;
  size_t quarter = ((size - 1 - base) * 4) / base;
  return base + (quarter + 1) * (base / 4);
}

void ValueArena::Unlink(Class& c, ChunkHeader* h) {
  if (h->prev != nullptr) h->prev->next = h->next;
  if (h->next != nullptr) h->next->prev = h->prev;
  if (c.partial == h) c.partial = h->next;
  h->prev = h->next = nullptr;
  h->linked = false;
}

void* ValueArena::Allocate(size_t size) {
  if (size > kLargeSize) {
    void* p = pool_->MapLarge(size);
    large_.emplace_back(p, size);
    live_bytes_ += ChunkPool::LargeSize(size);
    return p;
  }
  size_t index = ClassIndex(size);
  Class& c = classes_[index];
  ChunkHeader* h = c.partial;
  if (h == nullptr) {
    auto* base = static_cast<uint8_t*>(pool_->Acquire());
    h = reinterpret_cast<ChunkHeader*>(base);
    *h = ChunkHeader{nullptr,
                     nullptr,
                     nullptr,
                     kHeaderBytes,
                     0,
                     static_cast<uint32_t>(index),
                     static_cast<uint32_t>((ChunkPool::kChunkSize - kHeaderBytes) / c.size),
                     static_cast<uint32_t>(chunks_.size()),
                     true};
    c.partial = h;
    chunks_.push_back(h);
  }
  uint8_t* p;
  if (h->free != nullptr) {
    p = h->free;
    std::memcpy(&h->free, p, sizeof(void*));
  } else {
    p = reinterpret_cast<uint8_t*>(h) + h->bump;
    h->bump += c.size;
  }
  ++h->live;
  live_bytes_ += c.size;
  if (h->live == h->capacity) Unlink(c, h);
  return p;
}

void ValueArena::Free(void* p, size_t size) {
  if (size > kLargeSize) {
    auto it = std::find_if(large_.begin(), large_.end(),
                           [p](const auto& entry) { return entry.first == p; });
    if (it != large_.end()) {
      *it = large_.back();
      large_.pop_back();
    }
    live_bytes_ -= ChunkPool::LargeSize(size);
    pool_->UnmapLarge(p, size);
    return;
  }
  auto* h = reinterpret_cast<ChunkHeader*>(ChunkBase(p));
  Class& c = classes_[h->class_index];
  live_bytes_ -= c.size;
  if (--h->live == 0) {
    if (h->linked) Unlink(c, h);
    ChunkHeader* last = chunks_.back();
    last->list_index = h->list_index;
    chunks_[h->list_index] = last;
    chunks_.pop_back();
    pool_->Release(h);
    return;
  }
  std::memcpy(p, &h->free, sizeof(void*));
  h->free = static_cast<uint8_t*>(p);
  if (!h->linked) {
    h->linked = true;
    h->prev = nullptr;
    h->next = c.partial;
    if (c.partial != nullptr) c.partial->prev = h;
    c.partial = h;
  }
}

void ValueArena::Reset() {
  for (ChunkHeader* h : chunks_) pool_->Release(h);
  chunks_.clear();
  for (auto [p, size] : large_) pool_->UnmapLarge(p, size);
  large_.clear();
  for (Class& c : classes_) c.partial = nullptr;
  live_bytes_ = 0;
}

}  // namespace keep::core
