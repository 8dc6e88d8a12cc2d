// Key classes (design §2.5): the first byte of a key chooses its class, and a class's policy says
// what happens to its keys when the shard is over its memory share. A 256-entry byte -> class
// table makes the choice one load. Pure data: parsing of the config file is the server's; the
// byte-set syntax and the validation rules live here so they are tested once.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keep::core {

enum class EvictionPolicy : uint8_t {
  kLru = 0,     // evict approximately least recently used first
  kTtl = 1,     // evict the soonest to expire first (keys without a TTL are kept)
  kNone = 2,    // never evicted; writes that grow memory are refused when over the cap
  kPinned = 3,  // never evicted; writes proceed (pinned data is the operator's budget)
};

std::string_view PolicyName(EvictionPolicy policy);
// The maxmemory-policy Redis would name for a class policy (INFO, CONFIG GET): allkeys-lru,
// volatile-ttl, noeviction.
std::string_view RedisPolicyName(EvictionPolicy policy);
// False for an unknown name.
bool ParsePolicy(std::string_view name, EvictionPolicy* policy);

// Parses "a-f", "0-9,_", "\\x00-\\x1f", "s": comma-separated single bytes and inclusive ranges;
// a byte may be written as itself or as \xHH. A literal ',' or '-' is written \x2c / \x2d.
// Returns "" or an error message.
std::string ParseByteSet(std::string_view text, std::bitset<256>* bytes);

struct KeyClassSpec {
  std::string name;
  std::string bytes;  // ParseByteSet syntax; ignored for "default"
  std::string policy;
};

class KeyClassTable {
 public:
  static constexpr uint8_t kDefaultClass = 0;
  static constexpr size_t kMaxClasses = 64;

  // Every byte in class "default" with policy lru.
  KeyClassTable();

  // Validates and builds *table; false with a message naming the problem in *error otherwise
  // (empty name, unknown policy, overlapping ranges, bad byte set, duplicate name). Classes keep
  // the order given, after "default" (always index 0).
  static bool Build(const std::vector<KeyClassSpec>& specs, KeyClassTable* table,
                    std::string* error);

  uint8_t ClassOfByte(uint8_t byte) const { return class_of_[byte]; }
  uint8_t ClassOf(std::string_view key) const {
    return key.empty() ? class_of_[0] : class_of_[static_cast<uint8_t>(key[0])];
  }
  EvictionPolicy PolicyOf(uint8_t klass) const { return classes_[klass].policy; }
  std::string_view NameOf(uint8_t klass) const { return classes_[klass].name; }
  size_t size() const { return classes_.size(); }
  // Whether any class can be evicted at all (lru or ttl).
  bool AnyEvictable() const;

 private:
  struct Class {
    std::string name;
    EvictionPolicy policy;
  };
  std::vector<Class> classes_;
  std::array<uint8_t, 256> class_of_{};
};

}  // namespace keep::core
