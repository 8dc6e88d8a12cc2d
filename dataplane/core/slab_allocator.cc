#include "dataplane/core/slab_allocator.h"

namespace keep::core {

SlabAllocator::SlabAllocator(ChunkPool* pool) : pool_(pool) {
  for (size_t i = 0; i < kClassCount; ++i) classes_[i].size = slab_detail::kClassSizes[i];
}

SlabAllocator::~SlabAllocator() { Reset(); }

SlabAllocator::Page* SlabAllocator::NewPage() {
  if (!empty_pages_.empty()) {
    Page* page = empty_pages_.back();
    empty_pages_.pop_back();
    return page;
  }
  if (next_page_ == kPagesPerChunk) {
    auto* chunk = static_cast<uint8_t*>(pool_->Acquire());
    chunks_.push_back(chunk);
    next_page_ = 0;
  }
  auto* base = static_cast<uint8_t*>(chunks_.back());
  Page* page = &reinterpret_cast<Page*>(base)[next_page_];
  uint8_t* start = base + next_page_ * kPageSize;
  // The first page of a chunk starts after the descriptors.
  *page = Page{nullptr,
               next_page_ == 0 ? start + kDescriptorBytes : start,
               start + kPageSize,
               nullptr,
               nullptr,
               0,
               false};
  ++next_page_;
  return page;
}

void SlabAllocator::Unlink(Class& c, Page* page) {
  if (page->prev != nullptr) page->prev->next = page->next;
  if (page->next != nullptr) page->next->prev = page->prev;
  if (c.partial == page) c.partial = page->next;
  page->prev = page->next = nullptr;
  page->listed = false;
}

void* SlabAllocator::Refill(Class& c) {
  // The current page is full (a page is left only when it has nothing to give).
  Page* page = c.partial;
  if (page != nullptr) {
    Unlink(c, page);
  } else {
    page = NewPage();
    // A page from the empty pool still carries its old class's free list and bump position:
    // start it over for this class.
    const uintptr_t page_start = reinterpret_cast<uintptr_t>(page->end) - kPageSize;
    const bool first = (page_start & (ChunkPool::kChunkSize - 1)) == 0;
    page->free = nullptr;
    page->bump = reinterpret_cast<uint8_t*>(page_start) + (first ? kDescriptorBytes : 0);
    page->live = 0;
  }
  c.current = page;
  void* p;
  if (page->free != nullptr) {
    p = page->free;
    std::memcpy(&page->free, p, sizeof(void*));
  } else {
    p = page->bump;
    page->bump += c.size;
  }
  ++page->live;
  return p;
}

void SlabAllocator::OnFreeInOtherPage(Class& c, Page* page) {
  if (page->live == 0) {
    // Every object of the page is free: the page goes back for any class.
    if (page->listed) Unlink(c, page);
    empty_pages_.push_back(page);
    return;
  }
  if (!page->listed) {
    page->listed = true;
    page->prev = nullptr;
    page->next = c.partial;
    if (c.partial != nullptr) c.partial->prev = page;
    c.partial = page;
  }
}

void SlabAllocator::Reset() {
  for (void* chunk : chunks_) pool_->Release(chunk);
  chunks_.clear();
  empty_pages_.clear();
  next_page_ = kPagesPerChunk;
  for (Class& c : classes_) {
    c.current = c.partial = nullptr;
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
