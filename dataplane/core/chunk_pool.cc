#include "dataplane/core/chunk_pool.h"

#include "dataplane/core/chunk_prefaulter.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace keep::core {
namespace {

constexpr size_t kPageSize = 4096;

// Reserved hugetlbfs pages are a deliberate operator choice; use them when there are any.
bool HugeTlbAvailable() {
  static const bool available = [] {
    FILE* f = std::fopen("/proc/meminfo", "r");
    if (f == nullptr) return false;
    char line[128];
    long free_pages = 0;
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      if (std::sscanf(line, "HugePages_Free: %ld", &free_pages) == 1) break;
    }
    std::fclose(f);
    return free_pages > 0;
  }();
  return available;
}

[[noreturn]] void OutOfMemory(size_t bytes) {
  std::fprintf(stderr, "keep: mmap of %zu bytes failed\n", bytes);
  std::abort();
}

}  // namespace

ChunkPool::~ChunkPool() {
  Drain();
  if (spare_ != nullptr) UnmapChunk(spare_);
}

void* ChunkPool::MapChunk() {
  reserved_bytes_ += kChunkSize;
  // With a prefaulter, a chunk mapped here is one it did not have ready: it will be faulted in
  // by requests, so a page at a time rather than a huge page's worth in one request.
  return MapFresh(prefaulter_ == nullptr);
}

void ChunkPool::UnmapFresh(void* chunk) { munmap(chunk, kChunkSize); }

void* ChunkPool::TakePrefaulted() {
  if (prefaulter_ == nullptr) return nullptr;
  void* chunk = prefaulter_->Take(prefaulter_index_);
  if (chunk != nullptr) reserved_bytes_ += kChunkSize;
  return chunk;
}

void* ChunkPool::MapFresh(bool huge_pages) {
  constexpr size_t kSize = kChunkSize;
#ifdef MAP_HUGETLB
  if (huge_pages && HugeTlbAvailable()) {
    void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p != MAP_FAILED) return p;
  }
#endif
  // Over-map and trim so the chunk is aligned and the kernel can use one huge page for it.
  void* raw = mmap(nullptr, 2 * kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) OutOfMemory(2 * kSize);
  uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (start + kSize - 1) & ~(kSize - 1);
  if (aligned > start) munmap(raw, aligned - start);
  uintptr_t end = start + 2 * kSize;
  if (end > aligned + kSize)
    munmap(reinterpret_cast<void*>(aligned + kSize), end - aligned - kSize);
  void* p = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  if (huge_pages) madvise(p, kSize, MADV_HUGEPAGE);
#endif
  return p;
}

void ChunkPool::UnmapChunk(void* chunk) {
  munmap(chunk, kChunkSize);
  reserved_bytes_ -= kChunkSize;
}

void* ChunkPool::Acquire() {
  ++chunks_in_use_;
  if (spare_ != nullptr) {
    void* p = spare_;
    spare_ = nullptr;
    return p;
  }
  if (!released_.empty()) {
    void* p = released_.back();
    released_.pop_back();
    return p;
  }
  if (void* p = TakePrefaulted()) return p;
  return MapChunk();
}

void ChunkPool::Release(void* chunk) {
  --chunks_in_use_;
  released_.push_back(chunk);
}

size_t ChunkPool::LargeSize(size_t bytes) { return (bytes + kPageSize - 1) & ~(kPageSize - 1); }

void* ChunkPool::MapLarge(size_t bytes) {
  size_t size = LargeSize(bytes);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) OutOfMemory(size);
#ifdef MADV_HUGEPAGE
  if (size >= kChunkSize) madvise(p, size, MADV_HUGEPAGE);
#endif
  reserved_bytes_ += size;
  return p;
}

void ChunkPool::UnmapLarge(void* p, size_t bytes) { released_large_.emplace_back(p, bytes); }

void ChunkPool::Maintain() {
  if (spare_ == nullptr && !released_.empty()) {
    spare_ = released_.back();
    released_.pop_back();
  }
  Drain();
  if (spare_ == nullptr) spare_ = TakePrefaulted();
  if (spare_ == nullptr && prefaulter_ == nullptr) {
    spare_ = MapChunk();
    // Fault it in now, between requests, rather than on the first write of a request.
    auto* bytes = static_cast<volatile char*>(spare_);
    for (size_t i = 0; i < kChunkSize; i += kPageSize) bytes[i] = 0;
  }
}

void ChunkPool::Trim() {
  if (spare_ != nullptr) {
    UnmapChunk(spare_);
    spare_ = nullptr;
  }
  Drain();
}

void ChunkPool::Drain() {
  for (void* chunk : released_) UnmapChunk(chunk);
  released_.clear();
  for (auto [p, bytes] : released_large_) {
    size_t size = LargeSize(bytes);
    munmap(p, size);
    reserved_bytes_ -= size;
  }
  released_large_.clear();
}

}  // namespace keep::core
