// Faults in 2 MiB chunks for the shards' chunk pools on a thread of its own.
//
// The first write to fresh memory costs the kernel a fault per 4 KiB page or, with a transparent
// huge page, one fault that finds and zeroes 2 MiB (compacting memory first if it must); in a
// virtual machine whose memory the host has not backed yet, several milliseconds per chunk
// (measured here: about 5 ms of CPU). A shard doing that itself, on a request or between requests
// of its loop, holds every request of that turn for as long: a store growing by bulk loads showed
// GET p99.9 of 6-20 ms that way. The prefaulter keeps one faulted chunk ready per pool, so a shard
// only ever takes a pointer; the cost lands on a thread no request waits for.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

namespace keep::core {

class ChunkPrefaulter {
 public:
  explicit ChunkPrefaulter(int pools);
  // Stops the thread and unmaps the chunks nobody took.
  ~ChunkPrefaulter();
  ChunkPrefaulter(const ChunkPrefaulter&) = delete;
  ChunkPrefaulter& operator=(const ChunkPrefaulter&) = delete;

  // Pool `pool`'s ready chunk (ChunkPool::kChunkSize bytes, aligned to it, faulted in), or nullptr
  // when the next one is not ready yet. Only pool `pool`'s thread calls it for that pool.
  void* Take(int pool);
  // Chunks faulted in so far (for tests and diagnostics).
  uint64_t faulted() const { return faulted_.load(std::memory_order_relaxed); }

 private:
  void Run();

  struct alignas(64) Ready {
    std::atomic<void*> chunk{nullptr};
  };
  const int pools_;
  std::unique_ptr<Ready[]> ready_;
  std::atomic<uint64_t> taken_{
      0};  // bumped on every Take that took a chunk; the thread waits on it
  std::atomic<uint64_t> faulted_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace keep::core
