#include "dataplane/core/slab_allocator.h"

#include <algorithm>

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
               false,
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
    page->free = nullptr;
    page->bump = FirstObject(page);
    page->live = 0;
    page->klass = static_cast<uint8_t>(&c - classes_.data());
    page->stuck = false;
    ++c.pages;
    ++class_pages_;
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
    // A page being drained ends here too, whoever freed its last object.
    if (page == draining_) draining_ = nullptr;
    --c.pages;
    --class_pages_;
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

uint8_t* SlabAllocator::FirstObject(Page* page) {
  const uintptr_t page_start = reinterpret_cast<uintptr_t>(page->end) - kPageSize;
  const bool first = (page_start & (ChunkPool::kChunkSize - 1)) == 0;
  return reinterpret_cast<uint8_t*>(page_start) + (first ? kDescriptorBytes : 0);
}

bool SlabAllocator::BeginDrain() {
  // The list is in order of the latest free, so its head holds the pages eviction is emptying
  // right now, fuller than the ones it emptied before: look far enough to find those.
  constexpr int kPagesLooked = 512;
  for (size_t n = 0; n < kClassCount; ++n) {
    Class& c = classes_[drain_class_cursor_];
    drain_class_cursor_ = (drain_class_cursor_ + 1) % kClassCount;
    const size_t per_page = kPageSize / c.size;
    const size_t free_objects = c.pages * per_page - std::min(c.live, c.pages * per_page);
    if (free_objects < 2 * per_page || free_objects * 32 < c.pages * per_page) continue;
    Page* best = nullptr;
    int looked = 0;
    for (Page* page = c.partial; page != nullptr && looked < kPagesLooked; page = page->next) {
      ++looked;
      if (page->stuck) continue;
      if (best == nullptr || page->live < best->live) best = page;
    }
    // The class has at least two pages of holes, so its least used page fits into them: each
    // drain empties a page.
    if (best == nullptr) continue;
    Unlink(c, best);
    best->listed = true;  // so that frees do not put it back on the list
    draining_ = best;
    drain_next_ = 0;
    drain_free_.fill(0);
    uint8_t* first = FirstObject(best);
    for (uint8_t* p = best->free; p != nullptr;) {
      const size_t i = static_cast<size_t>(p - first) / c.size;
      drain_free_[i / 64] |= uint64_t{1} << (i % 64);
      uint8_t* next;  // a free object's first bytes link to the next
      std::memcpy(&next, p, sizeof(next));
      p = next;
    }
    return true;
  }
  return false;
}

void SlabAllocator::EndDrain() {
  // Objects the caller would not move remain: back on its class's list, never chosen again
  // before it empties.
  Page* page = draining_;
  draining_ = nullptr;
  page->stuck = true;
  page->listed = false;
  OnFreeInOtherPage(classes_[page->klass], page);
}

void SlabAllocator::Reset() {
  draining_ = nullptr;
  for (void* chunk : chunks_) pool_->Release(chunk);
  chunks_.clear();
  empty_pages_.clear();
  next_page_ = kPagesPerChunk;
  class_pages_ = 0;
  for (Class& c : classes_) {
    c.current = c.partial = nullptr;
    c.live = 0;
    c.pages = 0;
  }
  live_bytes_ = 0;
}

size_t SlabAllocator::fragmented_bytes() const {
  // The first page of each chunk is shorter by the descriptors; current pages may have a tail
  // never handed out, which is not fragmentation.
  size_t capacity = class_pages_ * kPageSize;
  size_t tails = 0;
  for (const Class& c : classes_) {
    if (c.current != nullptr) tails += static_cast<size_t>(c.current->end - c.current->bump);
  }
  const size_t unusable =
      tails + live_bytes_ + std::min(class_pages_, chunks_.size()) * kDescriptorBytes;
  return capacity > unusable ? capacity - unusable : 0;
}

size_t SlabAllocator::live_objects() const {
  size_t n = 0;
  for (const Class& c : classes_) n += c.live;
  return n;
}

}  // namespace keep::core
