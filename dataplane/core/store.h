// The key-value store of one shard: keys, values and expiry deadlines. Single-threaded by design
// (only its shard touches it), so nothing here locks.
//
// Deadlines are absolute milliseconds on the shard clock (Unix-epoch based but advanced by the
// monotonic clock, see clock.h). Lookups erase a key whose deadline has passed (lazy expiry);
// ExpireSome reclaims the rest incrementally with a bounded budget.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace keep::core {

enum class ValueType : uint8_t { kString = 0 };

inline constexpr int64_t kNoExpiry = -1;

class Store {
 public:
  struct Entry;
  // A handle to one entry; valid until the next call that inserts or erases.
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
  bool Erase(std::string_view key);
  void Erase(Ref ref);

  std::string_view Key(Ref ref) const;
  std::string_view Value(Ref ref) const;
  ValueType Type(Ref ref) const;
  void SetValue(Ref ref, std::string_view value);
  // Resizes the value to `length` bytes, keeping the common prefix and zero-filling any growth;
  // returns the writable bytes.
  char* ResizeValue(Ref ref, size_t length);

  int64_t ExpireAt(Ref ref) const;  // kNoExpiry when persistent
  void SetExpireAt(Ref ref, int64_t deadline_ms);

  // Keys present, including expired ones not yet reclaimed (as Redis's DBSIZE).
  size_t Size() const;
  size_t KeysWithExpiry() const;
  void Clear();

  // Visits up to about `count` entries from `cursor` (0 starts), skipping expired ones; returns
  // the next cursor, 0 when the walk is complete. Every key present for the whole walk is visited
  // at least once; with no inserts during the walk, exactly once.
  uint64_t Scan(uint64_t cursor, size_t count,
                const std::function<void(std::string_view key, Ref ref)>& visit);

  // Reclaims expired keys, examining at most `budget` entries; returns how many were erased.
  size_t ExpireSome(size_t budget);

  // A uniformly-ish random live key, or nullptr when empty.
  Ref RandomKey(uint64_t random);

  // Bytes used by keys and values, an estimate for INFO until the engine accounts exactly.
  size_t UsedBytes() const;

  uint64_t expired_keys() const { return expired_keys_; }

 private:
  struct Impl;
  bool ExpiredAt(Ref ref) const;

  std::unique_ptr<Impl> impl_;
  int64_t now_ms_ = 0;
  uint64_t expired_keys_ = 0;
};

}  // namespace keep::core
