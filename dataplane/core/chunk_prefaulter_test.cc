#include "dataplane/core/chunk_prefaulter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "dataplane/core/chunk_pool.h"

namespace keep::core {
namespace {

void* TakeWithin(ChunkPrefaulter& prefaulter, int pool, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (void* chunk = prefaulter.Take(pool)) return chunk;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return nullptr;
}

TEST(ChunkPrefaulter, EveryPoolGetsAlignedWritableChunksAndTheNextOneFollows) {
  ChunkPrefaulter prefaulter(3);
  for (int pool = 0; pool < 3; ++pool) {
    for (int round = 0; round < 2; ++round) {
      void* chunk = TakeWithin(prefaulter, pool, std::chrono::seconds(10));
      ASSERT_NE(chunk, nullptr) << "pool " << pool << " round " << round;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(chunk) % ChunkPool::kChunkSize, 0u);
      std::memset(chunk, 0x5A, ChunkPool::kChunkSize);
      EXPECT_EQ(static_cast<unsigned char*>(chunk)[ChunkPool::kChunkSize - 1], 0x5A);
      ChunkPool::UnmapFresh(chunk);
    }
  }
  EXPECT_GE(prefaulter.faulted(), 6u);
}

TEST(ChunkPrefaulter, APoolTakesItsChunksFromThePrefaulterAndCountsThem) {
  ChunkPrefaulter prefaulter(1);
  ChunkPool pool;
  pool.SetPrefaulter(&prefaulter, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (prefaulter.faulted() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(prefaulter.faulted(), 1u);
  pool.Maintain();  // the ready chunk becomes the spare
  EXPECT_EQ(pool.reserved_bytes(), ChunkPool::kChunkSize);
  void* a = pool.Acquire();
  void* b = pool.Acquire();  // the prefaulter's next one, or a fresh mapping if not ready yet
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.chunks_in_use(), 2u);
  EXPECT_EQ(pool.reserved_bytes(), 2 * ChunkPool::kChunkSize);
  pool.Release(a);
  pool.Release(b);
  pool.Trim();
  EXPECT_EQ(pool.reserved_bytes(), 0u);
}

TEST(ChunkPrefaulter, StopsPromptlyWithChunksNobodyTook) {
  const auto start = std::chrono::steady_clock::now();
  { ChunkPrefaulter prefaulter(4); }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace keep::core
