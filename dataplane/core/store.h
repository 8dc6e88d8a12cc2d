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
#include <string>
#include <string_view>

namespace keep::core {

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

  // Coarse time of the last Find or Insert of the entry (shard clock / kAccessClockUnitMs, modulo
  // 256), for approximate LRU eviction.
  static constexpr int64_t kAccessClockUnitMs = 16384;
  uint8_t AccessClock(Ref ref) const;

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

  uint64_t expired_keys() const { return expired_keys_; }

 private:
  struct Impl;

  std::unique_ptr<Impl> impl_;
  int64_t now_ms_ = 0;
  uint64_t expired_keys_ = 0;
};

}  // namespace keep::core
