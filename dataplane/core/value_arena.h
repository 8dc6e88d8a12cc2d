// Storage for large values (1 KiB and up) and for the rare record too big for the slab allocator.
//
// Objects up to kLargeSize come from 2 MiB chunks, each chunk dedicated to one size class (four
// classes per doubling, so at most 25% rounding). Every chunk keeps its own free list and live
// count in a header at its start; when its last object is freed the chunk goes back to the pool
// at once, so deleting large values returns memory without any compaction pass. Bigger objects get
// their own mapping. Like the slab allocator there is no per-object header: callers pass the size
// back to Free (records store the capacity they were given).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dataplane/core/chunk_pool.h"

namespace keep::core {

class ValueArena {
 public:
  static constexpr size_t kMinClass = 1024;
  static constexpr size_t kLargeSize = size_t{1} << 20;  // above: a dedicated mapping
  static constexpr size_t kClassCount = 4 * 10 + 1;      // 1 KiB .. 1 MiB

  explicit ValueArena(ChunkPool* pool);
  ~ValueArena();
  ValueArena(const ValueArena&) = delete;
  ValueArena& operator=(const ValueArena&) = delete;

  // Usable bytes of the block that Allocate(size) returns; Free must get the same size or any
  // size with the same ClassSize (e.g. the capacity itself).
  static size_t ClassSize(size_t size);

  void* Allocate(size_t size);
  void Free(void* p, size_t size);

  void Reset();

  size_t live_bytes() const { return live_bytes_; }
  size_t chunk_count() const { return chunks_.size(); }
  size_t large_count() const { return large_.size(); }

 private:
  struct ChunkHeader;
  struct Class {
    ChunkHeader* partial = nullptr;  // chunks with room, doubly linked
    uint32_t size = 0;
  };

  static size_t ClassIndex(size_t size);
  void Unlink(Class& c, ChunkHeader* h);

  ChunkPool* pool_;
  std::array<Class, kClassCount> classes_;
  std::vector<ChunkHeader*> chunks_;  // every chunk in use, for Reset
  std::vector<std::pair<void*, size_t>> large_;
  size_t live_bytes_ = 0;
};

}  // namespace keep::core
