// The layout of one entry's record: everything about a key except its table slot.
//
//   byte 0     flags: kHasExpiry kPinned kLock kInteger kExternal kLong, value type in bits 6-7
//   byte 1     access clock (coarse time of last access, for approximate LRU eviction)
//   short form (kLong clear): byte 2 key length, byte 3 value field          -> 4-byte header
//   long form  (kLong set):   bytes 2-5 key length, bytes 6-9 value field    -> 10-byte header
//   [8 bytes   expiry deadline, Unix ms, only with kHasExpiry]
//   key bytes
//   value section:
//     inline:    the value bytes (value field = length)
//     kInteger:  the value as a little-endian two's-complement integer of `value field` bytes
//                (1..8); the string form is canonical decimal, so it round-trips exactly
//     kExternal: 8-byte pointer to an arena block, 4-byte block capacity (value field = length)
//
// Records are byte-granular (no padding, no alignment): "key:1234567" -> "value:1234567" takes
// 4 + 11 + 13 = 28 bytes. Every multi-byte field is read with memcpy. The size of a record is a
// function of its header alone, so allocators need no per-object header.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace keep::core::record {

inline constexpr uint8_t kHasExpiry = 1 << 0;
inline constexpr uint8_t kPinned = 1 << 1;
inline constexpr uint8_t kLock = 1 << 2;
inline constexpr uint8_t kInteger = 1 << 3;
inline constexpr uint8_t kExternal = 1 << 4;
inline constexpr uint8_t kLong = 1 << 5;
inline constexpr int kTypeShift = 6;

inline constexpr size_t kShortHeader = 4;
inline constexpr size_t kLongHeader = 10;
inline constexpr size_t kExpiryBytes = 8;
inline constexpr size_t kExternalBytes = 12;
// Values from this size live in the value arena.
inline constexpr size_t kExternalMin = 1024;

inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void Store32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline int64_t Load64(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void Store64(uint8_t* p, int64_t v) { std::memcpy(p, &v, 8); }

inline uint8_t Flags(const uint8_t* r) { return r[0]; }
inline bool IsLong(const uint8_t* r) { return (r[0] & kLong) != 0; }
inline size_t LengthsEnd(uint8_t flags) { return (flags & kLong) ? kLongHeader : kShortHeader; }
inline size_t HeaderSize(uint8_t flags) {
  return LengthsEnd(flags) + ((flags & kHasExpiry) ? kExpiryBytes : 0);
}
inline uint32_t KeyLength(const uint8_t* r) { return IsLong(r) ? Load32(r + 2) : r[2]; }
inline uint32_t ValueField(const uint8_t* r) { return IsLong(r) ? Load32(r + 6) : r[3]; }
inline size_t ValueSection(uint8_t flags, uint32_t value_field) {
  return (flags & kExternal) ? kExternalBytes : value_field;
}
inline const uint8_t* KeyBytes(const uint8_t* r) { return r + HeaderSize(r[0]); }
inline std::string_view Key(const uint8_t* r) {
  return {reinterpret_cast<const char*>(KeyBytes(r)), KeyLength(r)};
}

inline uint8_t* ValueBytes(uint8_t* r) { return r + HeaderSize(r[0]) + KeyLength(r); }
inline const uint8_t* ValueBytes(const uint8_t* r) { return r + HeaderSize(r[0]) + KeyLength(r); }

// Whether two keys are equal. Every lookup that finds its key asks this once: for keys of 8 to 16
// bytes two overlapping words answer it inline, where the call into memcmp cost more than the
// comparison.
inline bool SameKey(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (b.size() != n) return false;
  if (n < 8 || n > 16) return n == 0 || std::memcmp(a.data(), b.data(), n) == 0;
  uint64_t a0, b0, a1, b1;
  std::memcpy(&a0, a.data(), 8);
  std::memcpy(&b0, b.data(), 8);
  std::memcpy(&a1, a.data() + n - 8, 8);
  std::memcpy(&b1, b.data() + n - 8, 8);
  return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

inline size_t Size(uint8_t flags, size_t key_length, uint32_t value_field) {
  return HeaderSize(flags) + key_length + ValueSection(flags, value_field);
}
inline size_t Size(const uint8_t* r) { return Size(r[0], KeyLength(r), ValueField(r)); }

// Whether a record with these lengths needs the long form.
inline bool NeedsLong(size_t key_length, uint32_t value_field) {
  return key_length > 255 || value_field > 255;
}

// Writes flags and lengths; the caller fills in the deadline, key and value section.
inline void WriteHeader(uint8_t* r, uint8_t flags, uint8_t clock, uint32_t key_length,
                        uint32_t value_field) {
  r[0] = flags;
  r[1] = clock;
  if (flags & kLong) {
    Store32(r + 2, key_length);
    Store32(r + 6, value_field);
  } else {
    r[2] = static_cast<uint8_t>(key_length);
    r[3] = static_cast<uint8_t>(value_field);
  }
}

inline int64_t Deadline(const uint8_t* r) { return Load64(r + LengthsEnd(r[0])); }
inline void SetDeadline(uint8_t* r, int64_t deadline) { Store64(r + LengthsEnd(r[0]), deadline); }

inline void* ExternalPointer(const uint8_t* value_section) {
  void* p;
  std::memcpy(&p, value_section, sizeof(p));
  return p;
}
inline uint32_t ExternalCapacity(const uint8_t* value_section) { return Load32(value_section + 8); }
inline void SetExternal(uint8_t* value_section, void* p, uint32_t capacity) {
  std::memcpy(value_section, &p, sizeof(p));
  Store32(value_section + 8, capacity);
}

// Integers use the fewest bytes that hold them, sign-extended on load.
inline uint32_t IntegerWidth(int64_t v) {
  uint32_t width = 1;
  while (width < 8) {
    int64_t limit = int64_t{1} << (8 * width - 1);
    if (v >= -limit && v < limit) break;
    ++width;
  }
  return width;
}
inline void StoreInteger(uint8_t* p, int64_t v, uint32_t width) {
  uint64_t u = static_cast<uint64_t>(v);
  for (uint32_t i = 0; i < width; ++i) p[i] = static_cast<uint8_t>(u >> (8 * i));
}
inline int64_t LoadInteger(const uint8_t* p, uint32_t width) {
  uint64_t u = 0;
  for (uint32_t i = 0; i < width; ++i) u |= uint64_t{p[i]} << (8 * i);
  int shift = 64 - 8 * static_cast<int>(width);
  return static_cast<int64_t>(u << shift) >> shift;
}

// True when `s` is exactly the canonical decimal form of an int64 (what Redis's string2ll
// accepts: no sign but '-', no leading zeros, no "-0"), so an integer encoding round-trips.
inline bool ParseCanonicalInteger(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  if (s[0] == '0' && s.size() > 1) return false;
  if (s[0] == '-' && (s.size() == 1 || s[1] == '0')) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// Decimal form of `v` into `buf` (at least 20 bytes); returns the length.
inline size_t FormatInteger(int64_t v, char* buf) {
  auto [end, ec] = std::to_chars(buf, buf + 20, v);
  (void)ec;
  return static_cast<size_t>(end - buf);
}

}  // namespace keep::core::record
