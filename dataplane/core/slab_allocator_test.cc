#include "dataplane/core/slab_allocator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "dataplane/core/chunk_pool.h"

namespace keep::core {
namespace {

TEST(SlabAllocatorTest, ClassesAreFineForSmallSizes) {
  for (size_t s = 8; s <= 64; ++s) EXPECT_EQ(SlabAllocator::ClassSize(s), s);
  EXPECT_EQ(SlabAllocator::ClassSize(1), 8u);
  EXPECT_EQ(SlabAllocator::ClassSize(65), 68u);
  EXPECT_EQ(SlabAllocator::ClassSize(144), 144u);
  EXPECT_EQ(SlabAllocator::ClassSize(576), 576u);
  EXPECT_EQ(SlabAllocator::ClassSize(2048), 2048u);
  for (size_t s = 1; s <= SlabAllocator::kMaxSize; ++s) {
    size_t c = SlabAllocator::ClassSize(s);
    EXPECT_GE(c, s);
    // Rounding never wastes more than 1/16 above 64 bytes.
    if (s > 64) {
      EXPECT_LE(c - s, s / 16 + 1) << s;
    }
  }
}

TEST(SlabAllocatorTest, ObjectsAreDistinctAndReused) {
  ChunkPool pool;
  SlabAllocator slab(&pool);
  std::vector<void*> objects;
  std::set<void*> seen;
  for (int i = 0; i < 100000; ++i) {
    size_t size = 8 + i % 200;
    void* p = slab.Allocate(size);
    std::memset(p, i & 0xFF, size);
    EXPECT_TRUE(seen.insert(p).second);
    objects.push_back(p);
  }
  EXPECT_EQ(slab.live_objects(), 100000u);
  for (int i = 0; i < 100000; ++i) slab.Free(objects[i], 8 + i % 200);
  EXPECT_EQ(slab.live_objects(), 0u);
  EXPECT_EQ(slab.live_bytes(), 0u);
  size_t chunks = slab.chunk_count();
  // Freed objects come back before any new page is carved.
  for (int i = 0; i < 100000; ++i) EXPECT_TRUE(seen.count(slab.Allocate(8 + i % 200)) == 1);
  EXPECT_EQ(slab.chunk_count(), chunks);
  slab.Reset();
  EXPECT_EQ(pool.chunks_in_use(), 0u);
}

TEST(ChunkPoolTest, ChunksAreAlignedAndAccounted) {
  ChunkPool pool;
  void* a = pool.Acquire();
  void* b = pool.Acquire();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % ChunkPool::kChunkSize, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % ChunkPool::kChunkSize, 0u);
  EXPECT_EQ(pool.reserved_bytes(), 2 * ChunkPool::kChunkSize);
  std::memset(a, 1, ChunkPool::kChunkSize);
  pool.Release(a);
  pool.Maintain();  // a becomes the warm spare
  EXPECT_EQ(pool.reserved_bytes(), 2 * ChunkPool::kChunkSize);
  EXPECT_EQ(pool.Acquire(), a);
  pool.Maintain();  // maps a new spare
  EXPECT_EQ(pool.reserved_bytes(), 3 * ChunkPool::kChunkSize);
  pool.Release(a);
  pool.Release(b);
  pool.Maintain();  // one spare already: both unmapped
  EXPECT_EQ(pool.reserved_bytes(), ChunkPool::kChunkSize);
  void* large = pool.MapLarge(5 << 20);
  EXPECT_EQ(pool.reserved_bytes(), ChunkPool::kChunkSize + (5u << 20));
  pool.UnmapLarge(large, 5 << 20);
  pool.Maintain();
  EXPECT_EQ(pool.reserved_bytes(), ChunkPool::kChunkSize);
}

}  // namespace
}  // namespace keep::core
