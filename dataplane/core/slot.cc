#include "dataplane/core/slot.h"

#include <cstring>

// Inlined: a key's hash is on every request's path (twice: its slot, its table entry), and for
// short keys the call into libxxhash cost as much as the hashing.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace keep::core {

namespace {

// Whether an 8-byte word holds `byte`: the classic zero-byte test on word ^ byte-in-every-lane,
// exact for the yes/no question.
bool WordHolds(uint64_t word, uint8_t byte) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  const uint64_t x = word ^ (kOnes * byte);
  return ((x - kOnes) & ~x & (kOnes << 7)) != 0;
}

// Whether `bytes` holds '{'. Every request's key is asked this (its slot) and nearly none has a
// tag: for the short keys that coordination traffic uses, a few word tests answer it without
// the call into memchr, which cost more than the rest of the slot's hash.
bool HoldsOpenBrace(std::string_view bytes) {
  constexpr size_t kWordTestLimit = 32;
  const size_t n = bytes.size();
  if (n < 8 || n > kWordTestLimit) return bytes.find('{') != std::string_view::npos;
  const char* p = bytes.data();
  uint64_t word;
  for (size_t at = 0; at + 8 < n; at += 8) {
    std::memcpy(&word, p + at, 8);
    if (WordHolds(word, '{')) return true;
  }
  std::memcpy(&word, p + n - 8, 8);  // the last 8 bytes, overlapping the words before
  return WordHolds(word, '{');
}

// The rest of HashTag, for the rare key that holds '{'.
[[gnu::noinline]] std::string_view TagAfterBrace(std::string_view key) {
  size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

// Inlined into the slot function: the common answer (no brace) then costs no call.
inline std::string_view FindHashTag(std::string_view key) {
  return HoldsOpenBrace(key) ? TagAfterBrace(key) : key;
}

}  // namespace

std::string_view HashTag(std::string_view key) { return FindHashTag(key); }

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
  std::string_view tagged = FindHashTag(key);
  if (kind_ == SlotHash::kCrc16) return Crc16Xmodem(tagged) & (kSlotCount - 1);
  return static_cast<uint32_t>(XXH3_64bits_withSeed(tagged.data(), tagged.size(), seed_) %
                               kSlotCount);
}

}  // namespace keep::core
