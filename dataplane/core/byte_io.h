// Little-endian fixed-width writing and bounds-checked reading of wire bytes, shared by the slot
// transfer records and the handoff messages. The reader never reads past its end: every Get
// returns false instead, and a failed reader stays failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keep::core {

inline void PutU8(std::string* out, uint8_t v) { out->push_back(static_cast<char>(v)); }
inline void PutLe(std::string* out, uint64_t v, int bytes) {
  char buf[8];
  for (int i = 0; i < bytes; ++i) buf[i] = static_cast<char>(v >> (8 * i));
  out->append(buf, static_cast<size_t>(bytes));
}
inline void PutU16(std::string* out, uint16_t v) { PutLe(out, v, 2); }
inline void PutU32(std::string* out, uint32_t v) { PutLe(out, v, 4); }
inline void PutU64(std::string* out, uint64_t v) { PutLe(out, v, 8); }
inline void PutI64(std::string* out, int64_t v) { PutLe(out, static_cast<uint64_t>(v), 8); }

inline uint64_t LoadLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}
inline void StoreLe(char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  bool GetU8(uint8_t* v) { return GetLe(v, 1); }
  bool GetU16(uint16_t* v) { return GetLe(v, 2); }
  bool GetU32(uint32_t* v) { return GetLe(v, 4); }
  bool GetU64(uint64_t* v) { return GetLe(v, 8); }
  bool GetI64(int64_t* v) {
    uint64_t u;
    if (!GetLe(&u, 8)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  // A view of the next `n` bytes (checked against what is left before anything else).
  bool GetBytes(size_t n, std::string_view* v) {
    if (!ok_ || n > remaining()) return ok_ = false;
    *v = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool ok() const { return ok_; }
  bool AtEnd() const { return ok_ && pos_ == data_.size(); }

 private:
  template <class T>
  bool GetLe(T* v, int bytes) {
    if (!ok_ || static_cast<size_t>(bytes) > remaining()) return ok_ = false;
    *v = static_cast<T>(LoadLe(data_.data() + pos_, bytes));
    pos_ += static_cast<size_t>(bytes);
    return true;
  }

  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace keep::core
