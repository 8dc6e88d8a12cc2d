// Key → slot (design §3.2). 16,384 slots; the same function places keys on shards inside a
// member (shard = slot mod shards) and on members in a cluster, so a handoff moves whole slots.
#pragma once

#include <cstdint>
#include <string_view>

namespace keep::core {

inline constexpr uint32_t kSlotCount = 16384;

enum class SlotHash : uint8_t {
  kKeyed,  // XXH3-64 keyed by the cluster secret (default)
  kCrc16,  // Redis Cluster's CRC16-XMODEM, so standard cluster clients route by themselves
};

// The bytes that decide the slot: the first non-empty `{...}` hash tag, else the whole key,
// with Redis Cluster's exact rules.
std::string_view HashTag(std::string_view key);

uint16_t Crc16Xmodem(std::string_view bytes);

// Decides slots for one process. The seed for kKeyed comes from the cluster secret.
class SlotFunction {
 public:
  SlotFunction() = default;
  SlotFunction(SlotHash kind, std::string_view secret);

  uint32_t operator()(std::string_view key) const;
  SlotHash kind() const { return kind_; }

 private:
  SlotHash kind_ = SlotHash::kKeyed;
  uint64_t seed_ = 0;
};

}  // namespace keep::core
