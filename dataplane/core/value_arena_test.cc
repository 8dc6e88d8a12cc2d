#include "dataplane/core/value_arena.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dataplane/core/chunk_pool.h"

namespace keep::core {
namespace {

TEST(ValueArenaTest, ClassesAndRoundTrip) {
  EXPECT_EQ(ValueArena::ClassSize(1), 1024u);
  EXPECT_EQ(ValueArena::ClassSize(1024), 1024u);
  EXPECT_EQ(ValueArena::ClassSize(1025), 1280u);
  EXPECT_EQ(ValueArena::ClassSize(2048), 2048u);
  EXPECT_EQ(ValueArena::ClassSize(2049), 2560u);
  EXPECT_EQ(ValueArena::ClassSize(1 << 20), 1u << 20);
  EXPECT_EQ(ValueArena::ClassSize((1 << 20) + 1), (1u << 20) + 4096);
  for (size_t s = 1000; s < (1 << 20); s = s * 9 / 8) {
    size_t c = ValueArena::ClassSize(s);
    EXPECT_GE(c, s);
    EXPECT_EQ(ValueArena::ClassSize(c), c);  // Free(p, capacity) finds the same class
    EXPECT_LE(c, s + s / 4 + 1024);
  }
}

TEST(ValueArenaTest, ChunksReturnWhenEmpty) {
  ChunkPool pool;
  ValueArena arena(&pool);
  std::vector<std::pair<void*, size_t>> blocks;
  for (int i = 0; i < 3000; ++i) {
    size_t size = 1024 + (i * 7919) % 60000;
    void* p = arena.Allocate(size);
    std::memset(p, i & 0xFF, size);
    blocks.emplace_back(p, size);
  }
  blocks.emplace_back(arena.Allocate(3 << 20), 3 << 20);  // a dedicated mapping
  EXPECT_EQ(arena.large_count(), 1u);
  EXPECT_GT(arena.chunk_count(), 0u);
  // Contents survive neighbours being written.
  for (size_t i = 0; i < 3000; ++i) {
    EXPECT_EQ(static_cast<uint8_t*>(blocks[i].first)[blocks[i].second - 1], i & 0xFF);
  }
  for (auto [p, size] : blocks) arena.Free(p, size);
  EXPECT_EQ(arena.chunk_count(), 0u);
  EXPECT_EQ(arena.live_bytes(), 0u);
  EXPECT_EQ(pool.chunks_in_use(), 0u);
  pool.Maintain();
  EXPECT_EQ(pool.reserved_bytes(), ChunkPool::kChunkSize);  // only the spare
}

}  // namespace
}  // namespace keep::core
