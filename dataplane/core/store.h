// The key-value store of one shard: keys, values and expiry deadlines. Single-threaded by design
// (only its shard touches it), so nothing here locks.
//
// Deadlines are absolute milliseconds on the shard clock (Unix-epoch based but advanced by the
// monotonic clock, see clock.h). Lookups erase a key whose deadline has passed (lazy expiry);
// ExpireSome reclaims the rest incrementally with a bounded budget.
//
// The engine (design §2.5): a Dash-style segmented hash table (dash_table.h) whose slots point at
// compact records (record.h) from a per-store size-class slab allocator (slab_allocator.h); values
// from 1 KiB live in a value arena (value_arena.h); all memory comes from 2 MiB chunks of the
// store's own ChunkPool, so UsedBytes() is exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/core/key_classes.h"

namespace keep::core {

class ChunkPrefaulter;

enum class ValueType : uint8_t { kString = 0, kLock = 1 };

inline constexpr int64_t kNoExpiry = -1;

class Store {
 public:
  struct Entry;
  // A handle to one entry (it designates the entry's table slot, so it survives SetValue,
  // ResizeValue and SetExpireAt even when they move the record); valid until the next call that
  // inserts or erases (Insert, Erase, Find/RandomKey of an expired key, ExpireSome, Clear).
  using Ref = Entry*;

  Store();
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The time used for lazy expiry; the shard sets it once per loop turn.
  void SetNow(int64_t now_ms) { now_ms_ = now_ms; }
  int64_t now() const { return now_ms_; }

  // nullptr when absent or expired (an expired key is erased on the way).
  Ref Find(std::string_view key);
  // Hides the cache misses of a batch of lookups (pipelined requests) behind each other: call
  // PrefetchSlot for each key of the batch, then PrefetchRecord for each, then execute them.
  // Hints only: no effect on contents, harmless for keys that are absent or never looked up.
  // PrefetchSlot keeps each key's hash for PrefetchRecord and Find, recognised by the key's
  // address and length: call ForgetKeyHashes once the batch has executed, before the memory the
  // keys were parsed into may hold anything else.
  void PrefetchSlot(std::string_view key) const;
  void PrefetchRecord(std::string_view key) const;
  // Both passes for a batch's keys (nothing for a batch of one: nothing to overlap).
  void PrefetchKeys(std::span<const std::string_view> keys) const;
  void ForgetKeyHashes();
  // Inserts an absent key (call Find first) with no expiry.
  Ref Insert(std::string_view key, std::string_view value, ValueType type = ValueType::kString);
  // False when absent or already expired (an expired key is erased and counted as expired).
  bool Erase(std::string_view key);
  void Erase(Ref ref);

  // Views into the store, valid until the next call that changes the entry or the store.
  std::string_view Key(Ref ref) const;
  // A value that is the canonical decimal form of an int64 is stored as the integer; its string
  // form is then written to one of kValueScratch per-store buffers (reused round-robin), so such a
  // view also ends after kValueScratch further Value() calls. Copy it to keep it longer.
  std::string_view Value(Ref ref) const;
  static constexpr int kValueScratch = 4;
  ValueType Type(Ref ref) const;
  // `value` may point into this store (e.g. a view of this very value).
  void SetValue(Ref ref, std::string_view value);
  // Resizes the value to `length` bytes, keeping the common prefix and zero-filling any growth;
  // returns the writable bytes (valid like a Value() view; the entry is no longer an integer).
  char* ResizeValue(Ref ref, size_t length);

  // Integer fast path for INCR and friends: true with the value when it is stored as an integer
  // (any value that is a canonical int64 is); false means "parse Value() yourself".
  bool IntegerValue(Ref ref, int64_t* value) const;
  void SetInteger(Ref ref, int64_t value);

  int64_t ExpireAt(Ref ref) const;  // kNoExpiry when persistent
  void SetExpireAt(Ref ref, int64_t deadline_ms);

  // Keys present, including expired ones not yet reclaimed (as Redis's DBSIZE).
  size_t Size() const;
  size_t KeysWithExpiry() const;
  void Clear();

  // Visits up to about `count` entries from `cursor` (0 starts), skipping expired ones; returns
  // the next cursor, 0 when the walk is complete. Cursors are below 2^47, so a caller may pack
  // more beside them (SCAN adds the shard). Every key present for the whole walk is visited
  // at least once; with no inserts during the walk, exactly once. The order is by hash, so the
  // cursor survives table growth. A call may visit up to one table segment (under 1,000 entries)
  // more than `count` after the table grew mid-walk. `visit` may Erase the ref it is given and
  // nothing else; it must not insert.
  uint64_t Scan(uint64_t cursor, size_t count,
                const std::function<void(std::string_view key, Ref ref)>& visit);

  // Reclaims expired keys, examining at most `budget` entries; returns how many were erased.
  size_t ExpireSome(size_t budget);

  // A uniformly-ish random live key, or nullptr when empty. Also the sampling primitive for
  // eviction (see AccessClock).
  Ref RandomKey(uint64_t random);

  // The access clock at the last Find or Insert of the entry, for approximate LRU eviction. The
  // clock is logical, not wall time: it ticks once every max(1, Size() / 64) Finds and Inserts,
  // so its 256 values span about four times the keyspace's worth of accesses whatever the
  // request rate (an entry idle for longer wraps around and looks younger than it is).
  uint8_t AccessClock(Ref ref) const;
  uint8_t access_clock() const { return clock_; }

  // Bytes this store has reserved from the OS: table, records and arena chunks (including the
  // one warm spare), large-value mappings and the table directory. Exact, not an estimate.
  size_t UsedBytes() const;
  // Key and value bytes as a client sees them (an integer counts its decimal length).
  size_t LogicalBytes() const;
  // Where UsedBytes goes, for INFO memory and for tuning.
  struct MemoryStats {
    size_t used_bytes = 0;       // UsedBytes()
    size_t table_bytes = 0;      // blocks and segment headers (inside chunks)
    size_t directory_bytes = 0;  // the table directory (ordinary heap)
    size_t table_slots = 0;      // slots in all segments; Size() / table_slots is the load
    size_t segments = 0;
    size_t record_bytes = 0;  // slab objects other than the table's, at their class sizes
    size_t arena_bytes = 0;   // large values and oversized records, at their class sizes
  };
  MemoryStats GetMemoryStats() const;
  // How late expiry is running: the largest (now - deadline) among expired keys that the
  // incremental walk (ExpireSome) reclaimed during its current and previous pass over the table.
  int64_t ExpiryLagMs() const;
  // Returns released memory to the OS and pre-faults a spare chunk; ExpireSome calls it, so the
  // shard need not. Never on a request path: it may map or unmap memory.
  void Maintain();

  // Fresh chunks come faulted in from `prefaulter` (pool `index`), off this store's thread.
  void UsePrefaulter(ChunkPrefaulter* prefaulter, int index);

  uint64_t expired_keys() const { return expired_keys_; }

  // Active defragmentation. Freed records leave holes in the slab's pages; a class whose keys
  // stop being written (keys growing a digit under eviction, values changing size) keeps its
  // sparse pages, and the store grows past its cap in resident memory. When the holes exceed
  // live/32 + 1 MiB, this moves up to `budget` records (more, to 8x, the more fragmented) out of
  // the sparsest pages of the most fragmented classes (SlabAllocator::Drain), so those pages
  // empty and serve any class again; it stops below live/64 + 512 KiB, or when no class is worth
  // it (then it waits for the holes to grow). Returns whether it is under way. Between requests
  // only: records move (Refs stay valid, views into values do not).
  bool DefragSome(size_t budget);
  // The fixed part of those thresholds (1 MiB); tests lower it to exercise small stores.
  void SetDefragFloor(size_t bytes) { defrag_floor_bytes_ = bytes; }
  bool defragging() const { return defrag_active_; }
  // Free bytes inside the slab pages classes hold (SlabAllocator::fragmented_bytes).
  size_t FragmentedBytes() const;
  uint64_t defrag_hits() const { return defrag_hits_; }      // records moved
  uint64_t defrag_misses() const { return defrag_misses_; }  // records looked at and left

  // --- Key classes, the memory cap and eviction (design §2.5) ---

  // Replaces the class table; per-class key and byte counts are recomputed from the entries.
  void SetKeyClasses(const KeyClassTable& classes);
  const KeyClassTable& key_classes() const { return classes_; }
  struct ClassStats {
    uint64_t keys = 0;
    uint64_t bytes = 0;  // KeyFootprint summed over the class's keys
    uint64_t evicted = 0;
    uint64_t expired = 0;
  };
  const ClassStats& class_stats(size_t klass) const { return class_stats_[klass]; }

  // What one key costs: its record and arena block at their allocation sizes, plus its share of
  // the table (one slot and its control byte). MEMORY USAGE reports it.
  size_t KeyFootprint(Ref ref) const;

  // Bytes of live allocations: table blocks and segment headers, records, arena blocks, large
  // mappings and the directory. What the memory cap measures (like Redis's used_memory, it
  // excludes free space the allocators hold for reuse; UsedBytes() includes it).
  size_t AllocatedBytes() const;

  // The cap for this store (0: none) and bytes of the shard's own that count against it
  // (connection buffers).
  void SetMemoryLimit(size_t bytes) { limit_ = bytes; }
  size_t memory_limit() const { return limit_; }
  void SetExternalBytes(size_t bytes) { external_bytes_ = bytes; }
  size_t external_bytes() const { return external_bytes_; }
  bool OverLimit() const { return limit_ != 0 && AllocatedBytes() + external_bytes_ > limit_; }

  // Before a write that may grow memory, for a key of class `klass`: while over the limit, evicts
  // up to `budget` keys. False means refuse the write with OOM: the key's class has policy none,
  // or nothing could be evicted. True while eviction makes progress even if still over (the loop
  // goes on with EvictSome), so a write never waits for a long eviction run.
  bool MakeRoom(uint8_t klass, size_t budget);
  // While over the limit, evicts up to `budget` keys; returns how many went.
  size_t EvictSome(size_t budget);
  // Evicts one key chosen by sampling (see store.cc); false when no sampled key could go.
  bool EvictOne();
  uint64_t evicted_keys() const { return evicted_keys_; }

  // Samples per eviction, as Redis's maxmemory-samples default.
  static constexpr int kEvictionSamples = 5;

  struct Impl;  // the engine's internals; store.cc only

 private:
  void CountAccess();
  uint64_t NextRandom();

  std::unique_ptr<Impl> impl_;
  int64_t now_ms_ = 0;
  uint64_t expired_keys_ = 0;
  uint64_t evicted_keys_ = 0;
  bool defrag_active_ = false;
  size_t defrag_floor_bytes_ = size_t{1} << 20;
  size_t defrag_rearm_bytes_ = 0;  // when no class was worth it, wait for this much
  uint64_t defrag_hits_ = 0;
  uint64_t defrag_misses_ = 0;
  KeyClassTable classes_;
  std::vector<ClassStats> class_stats_;
  size_t limit_ = 0;
  size_t external_bytes_ = 0;
  uint8_t clock_ = 0;  // see AccessClock
  uint64_t clock_countdown_ = 1;
  uint64_t random_ = 0x853c49e6748fea9bull;
  bool prefer_ttl_ = false;  // alternates between the lru and ttl candidates of a sample
};

}  // namespace keep::core
