#include "dataplane/core/chunk_prefaulter.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "dataplane/core/chunk_pool.h"

namespace keep::core {

ChunkPrefaulter::ChunkPrefaulter(int pools)
    : pools_(pools), ready_(std::make_unique<Ready[]>(static_cast<size_t>(pools))) {
  thread_ = std::thread([this] { Run(); });
}

ChunkPrefaulter::~ChunkPrefaulter() {
  stop_.store(true, std::memory_order_release);
  taken_.fetch_add(1, std::memory_order_release);
  taken_.notify_one();
  thread_.join();
  for (int i = 0; i < pools_; ++i) {
    if (void* chunk = ready_[i].chunk.exchange(nullptr)) ChunkPool::UnmapFresh(chunk);
  }
}

void* ChunkPrefaulter::Take(int pool) {
  void* chunk = ready_[pool].chunk.exchange(nullptr, std::memory_order_acquire);
  if (chunk != nullptr) {
    taken_.fetch_add(1, std::memory_order_release);
    taken_.notify_one();
  }
  return chunk;
}

void ChunkPrefaulter::Run() {
  pthread_setname_np(pthread_self(), "keep-prefault");
  // Lowest priority of the normal policy: a chunk's faults take milliseconds (several in a
  // virtual machine growing into memory its host has not backed yet), which should come out of
  // idle time. Not SCHED_IDLE: on cores the shards keep busy it would starve, and the shards would
  // then fault their own chunks on requests. A pool that finds nothing ready maps its own chunk.
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
  while (!stop_.load(std::memory_order_acquire)) {
    const uint64_t seen = taken_.load(std::memory_order_acquire);
    for (int i = 0; i < pools_ && !stop_.load(std::memory_order_relaxed); ++i) {
      if (ready_[i].chunk.load(std::memory_order_relaxed) != nullptr) continue;
      void* chunk = ChunkPool::MapFresh(/*huge_pages=*/true);
      auto* bytes = static_cast<volatile char*>(chunk);
      for (size_t offset = 0; offset < ChunkPool::kChunkSize; offset += 4096) bytes[offset] = 0;
      ready_[i].chunk.store(chunk, std::memory_order_release);
      faulted_.fetch_add(1, std::memory_order_relaxed);
    }
    taken_.wait(seen, std::memory_order_acquire);
  }
}

}  // namespace keep::core
