// Memory straight from the OS for one shard's store, in 2 MiB chunks aligned to 2 MiB so that the
// kernel can back each with one huge page, plus dedicated mappings for very large values.
//
// Mapping, faulting in and unmapping memory costs tens of microseconds; none of it should land on
// a request. Release() and UnmapLarge() only queue, and Maintain() (called between requests, from
// Store::ExpireSome) unmaps the queue and keeps one warm, pre-faulted spare chunk for the next
// Acquire(). Single-threaded, like everything a shard owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace keep::core {

class ChunkPrefaulter;

class ChunkPool {
 public:
  static constexpr size_t kChunkSize = size_t{2} << 20;

  ChunkPool() = default;
  ~ChunkPool();
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // A kChunkSize-aligned chunk; contents are unspecified (a reused chunk is not zeroed).
  void* Acquire();
  void Release(void* chunk);

  // A mapping of at least `bytes` (rounded up to pages) for one large object.
  void* MapLarge(size_t bytes);
  void UnmapLarge(void* p, size_t bytes);

  // Unmaps what was released and makes sure a warm spare chunk is ready.
  void Maintain();
  // Unmaps what was released and the spare too, so the next Acquire maps a fresh chunk whose
  // untouched pages cost nothing resident (after the store was emptied).
  void Trim();

  // Chunks come faulted in from `prefaulter` (its pool `index`) when it has one ready; without a
  // prefaulter, Maintain faults the spare in itself.
  void SetPrefaulter(ChunkPrefaulter* prefaulter, int index) {
    prefaulter_ = prefaulter;
    prefaulter_index_ = index;
  }

  // A fresh kChunkSize-aligned mapping of kChunkSize bytes, not counted by any pool; UnmapFresh
  // undoes it. With `huge_pages`, reserved huge pages or else MADV_HUGEPAGE: the first write
  // faults all 2 MiB at once (a few hundred microseconds, milliseconds in a virtual machine
  // growing into memory the host has not backed yet), so only a prefaulted chunk should have it;
  // without, each 4 KiB page faults on its own first write, a few microseconds each.
  static void* MapFresh(bool huge_pages);
  static void UnmapFresh(void* chunk);

  // Everything currently mapped: chunks in use, the spare, queued releases, large mappings.
  size_t reserved_bytes() const { return reserved_bytes_; }
  size_t chunks_in_use() const { return chunks_in_use_; }

  static size_t LargeSize(size_t bytes);

 private:
  void* MapChunk();
  void UnmapChunk(void* chunk);
  void Drain();

  void* TakePrefaulted();

  ChunkPrefaulter* prefaulter_ = nullptr;
  int prefaulter_index_ = 0;
  void* spare_ = nullptr;
  std::vector<void*> released_;
  std::vector<std::pair<void*, size_t>> released_large_;
  size_t reserved_bytes_ = 0;
  size_t chunks_in_use_ = 0;
};

}  // namespace keep::core
