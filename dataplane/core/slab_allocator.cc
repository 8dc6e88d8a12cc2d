#include "dataplane/core/slab_allocator.h"

namespace keep::core {

SlabAllocator::SlabAllocator(ChunkPool* pool) : pool_(pool) {
  for (size_t i = 0; i < kClassCount; ++i) classes_[i].size = slab_detail::kClassSizes[i];
}

SlabAllocator::~SlabAllocator() { Reset(); }

void* SlabAllocator::Refill(Class& c) {
  if (chunk_bump_ == chunk_end_) {
    auto* chunk = static_cast<uint8_t*>(pool_->Acquire());
    chunks_.push_back(chunk);
    chunk_bump_ = chunk;
    chunk_end_ = chunk + ChunkPool::kChunkSize;
  }
  // The tail of the previous page (less than one object) is abandoned: at most 2 KiB per page.
  c.bump = chunk_bump_;
  c.end = chunk_bump_ + kPageSize;
  chunk_bump_ += kPageSize;
  void* p = c.bump;
  c.bump += c.size;
  return p;
}

void SlabAllocator::Reset() {
  for (void* chunk : chunks_) pool_->Release(chunk);
  chunks_.clear();
  chunk_bump_ = chunk_end_ = nullptr;
  for (Class& c : classes_) {
    c.free = c.bump = c.end = nullptr;
    c.live = 0;
  }
  live_bytes_ = 0;
}

size_t SlabAllocator::live_objects() const {
  size_t n = 0;
  for (const Class& c : classes_) n += c.live;
  return n;
}

}  // namespace keep::core
