#include "dataplane/core/slot.h"

// Inlined: a key's hash is on every request's path (twice: its slot, its table entry), and for
// short keys the call into libxxhash cost as much as the hashing.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace keep::core {

std::string_view HashTag(std::string_view key) {
  size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

uint16_t Crc16Xmodem(std::string_view bytes) {
  uint16_t crc = 0;
  for (unsigned char byte : bytes) {
    crc ^= static_cast<uint16_t>(byte) << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

SlotFunction::SlotFunction(SlotHash kind, std::string_view secret)
    : kind_(kind), seed_(XXH3_64bits_withSeed(secret.data(), secret.size(), 0x6b656570)) {}

uint32_t SlotFunction::operator()(std::string_view key) const {
  std::string_view tagged = HashTag(key);
  if (kind_ == SlotHash::kCrc16) return Crc16Xmodem(tagged) & (kSlotCount - 1);
  return static_cast<uint32_t>(XXH3_64bits_withSeed(tagged.data(), tagged.size(), seed_) %
                               kSlotCount);
}

}  // namespace keep::core
