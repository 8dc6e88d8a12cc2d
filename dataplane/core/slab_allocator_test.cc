#include "dataplane/core/slab_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <random>
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
  // Freed memory comes back before any new chunk is taken (an emptied page may now serve
  // another class, so addresses need not repeat).
  for (int i = 0; i < 100000; ++i) slab.Allocate(8 + i % 200);
  EXPECT_EQ(slab.chunk_count(), chunks);
  slab.Reset();
  EXPECT_EQ(pool.chunks_in_use(), 0u);
}

TEST(SlabAllocatorTest, EmptyPagesServeOtherClasses) {
  ChunkPool pool;
  SlabAllocator slab(&pool);
  // Fill with one class, free it all, then fill with another: the pages are reused, not added.
  for (int round = 0; round < 8; ++round) {
    const size_t size = 100 + 4 * round;  // a different class each round
    std::vector<void*> objects;
    for (int i = 0; i < 100000; ++i) {
      auto* p = static_cast<uint8_t*>(slab.Allocate(size));
      std::memset(p, round, size);
      objects.push_back(p);
    }
    for (void* p : objects) {
      ASSERT_EQ(static_cast<uint8_t*>(p)[size - 1], round);
      slab.Free(p, size);
    }
    EXPECT_EQ(slab.live_bytes(), 0u);
  }
  EXPECT_LE(slab.chunk_count(), 7u);  // 100000 * 128 bytes is about 6 chunks
  EXPECT_GT(slab.empty_pages(), 300u);
}

TEST(SlabAllocatorTest, ChurnAcrossClassesStaysBounded) {
  // Eviction-like churn: a sliding window of live objects whose size drifts upward.
  ChunkPool pool;
  SlabAllocator slab(&pool);
  std::deque<std::pair<void*, size_t>> window;
  size_t max_chunks = 0;
  for (int i = 0; i < 2'000'000; ++i) {
    const size_t size = 104 + (i / 250000) * 4;
    window.emplace_back(slab.Allocate(size), size);
    if (window.size() > 200000) {
      slab.Free(window.front().first, window.front().second);
      window.pop_front();
    }
    max_chunks = std::max(max_chunks, slab.chunk_count());
  }
  // 200000 live objects of at most 132 bytes: about 13 chunks; calcified classes would need ~60.
  EXPECT_LE(max_chunks, 16u);
  std::mt19937 rng(3);
  std::shuffle(window.begin(), window.end(), rng);
  for (auto [p, size] : window) slab.Free(p, size);
  EXPECT_EQ(slab.live_objects(), 0u);
}

TEST(SlabAllocatorTest, DrainEmptiesSparsePagesIntoFullerOnes) {
  ChunkPool pool;
  SlabAllocator slab(&pool);
  constexpr size_t kSize = 100;
  std::vector<uint8_t*> objects;
  for (int i = 0; i < 200000; ++i) {
    auto* p = static_cast<uint8_t*>(slab.Allocate(kSize));
    std::memset(p, i & 0xFF, kSize);
    objects.push_back(p);
  }
  EXPECT_LT(slab.fragmented_bytes(), 64u << 10);
  EXPECT_LT(slab.fragmented_bytes_bound(), 128u << 10);
  EXPECT_FALSE(slab.Drain(1000, [](void*, size_t) { return false; }));  // dense: no page
  // Keep one in five, scattered over every page; the caller knows its objects by address.
  std::map<uint8_t*, int> kept;
  std::mt19937 rng(5);
  for (int i = 0; i < 200000; ++i) {
    if (rng() % 5 == 0) {
      kept.emplace(objects[i], i);
    } else {
      slab.Free(objects[i], kSize);
    }
  }
  const size_t fragmented = slab.fragmented_bytes();
  EXPECT_GT(fragmented, 10u << 20);  // 160000 holes of 100 bytes
  EXPECT_GE(slab.fragmented_bytes_bound(), fragmented);
  EXPECT_LT(slab.fragmented_bytes_bound(), fragmented + (1u << 20));
  const size_t empty_before = slab.empty_pages();
  size_t moved = 0;
  size_t handed = 0;
  int calls = 0;
  while (slab.Drain(64, [&](void* object, size_t size) {
    ++handed;
    EXPECT_EQ(size, SlabAllocator::ClassSize(kSize));
    auto it = kept.find(static_cast<uint8_t*>(object));
    EXPECT_NE(it, kept.end());  // only live objects are handed out
    if (it == kept.end()) return false;
    auto* fresh = static_cast<uint8_t*>(slab.Allocate(kSize));
    std::memcpy(fresh, object, kSize);
    slab.Free(object, kSize);
    const int index = it->second;
    kept.erase(it);
    EXPECT_TRUE(kept.emplace(fresh, index).second);
    ++moved;
    return true;
  })) {
    ASSERT_LT(++calls, 100000);
  }
  EXPECT_EQ(moved, handed);
  EXPECT_GT(moved, kept.size() / 2);
  EXPECT_LT(moved, kept.size() * 2);  // each object moves about once
  EXPECT_LT(slab.fragmented_bytes(), fragmented / 4);
  EXPECT_GT(slab.empty_pages(), empty_before + 350);  // about 500 pages' worth emptied
  for (auto [p, i] : kept) {
    ASSERT_EQ(p[0], i & 0xFF);
    ASSERT_EQ(p[kSize - 1], i & 0xFF);
  }
  // A page whose objects the caller will not move is left alone afterwards.
  for (int i = 0; i < 20000; ++i) objects[i] = static_cast<uint8_t*>(slab.Allocate(60));
  for (int i = 0; i < 20000; ++i) {
    if (i % 8 != 0) slab.Free(objects[i], 60);
  }
  size_t refused = 0;
  while (slab.Drain(64, [&](void*, size_t) {
    ++refused;
    return false;
  })) {
    ASSERT_LT(++calls, 200000);
  }
  EXPECT_GT(refused, 0u);
  EXPECT_LE(refused, 2500u);  // each live object offered once
  for (auto [p, i] : kept) slab.Free(p, kSize);
  for (int i = 0; i < 20000; i += 8) slab.Free(objects[i], 60);
  EXPECT_EQ(slab.live_objects(), 0u);
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
