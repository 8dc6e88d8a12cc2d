#include "dataplane/commands/string_util.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace keep::commands {

bool ParseInt64(std::string_view text, int64_t* value) {
  // Redis refuses anything of LONG_STR_SIZE (21) bytes or more before looking at it.
  if (text.empty() || text.size() >= 21) return false;
  if (text.size() == 1 && text[0] == '0') {
    *value = 0;
    return true;
  }
  size_t i = 0;
  bool negative = false;
  if (text[0] == '-') {
    negative = true;
    if (text.size() == 1) return false;
    i = 1;
  }
  if (text[i] < '1' || text[i] > '9') return false;
  uint64_t v = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c < '0' || c > '9') return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > UINT64_MAX / 10) return false;
    v *= 10;
    if (v > UINT64_MAX - digit) return false;
    v += digit;
  }
  if (negative) {
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *value = static_cast<int64_t>(0 - v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *value = static_cast<int64_t>(v);
  }
  return true;
}

bool ParseInt32(std::string_view text, int32_t* value) {
  int64_t wide;
  if (!ParseInt64(text, &wide) || wide < INT32_MIN || wide > INT32_MAX) return false;
  *value = static_cast<int32_t>(wide);
  return true;
}

bool ParseLongDouble(std::string_view text, long double* value) {
  // strtold needs a terminated copy; Redis uses the same fixed buffer and length limit.
  char buf[kMaxLongDoubleChars];
  if (text.empty() || text.size() >= sizeof(buf)) return false;
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  errno = 0;
  char* end = nullptr;
  long double parsed = std::strtold(buf, &end);
  if (std::isspace(static_cast<unsigned char>(buf[0])) || *end != '\0' ||
      static_cast<size_t>(end - buf) != text.size() ||
      (errno == ERANGE &&
       (parsed == HUGE_VALL || parsed == -HUGE_VALL || std::fpclassify(parsed) == FP_ZERO)) ||
      errno == EINVAL || std::isnan(parsed)) {
    return false;
  }
  *value = parsed;
  return true;
}

size_t FormatLongDouble(long double value, char* buf) {
  if (std::isinf(value)) {
    if (value > 0) {
      std::memcpy(buf, "inf", 3);
      return 3;
    }
    std::memcpy(buf, "-inf", 4);
    return 4;
  }
  int written = std::snprintf(buf, kMaxLongDoubleChars, "%.17Lf", value);
  if (written < 0 || static_cast<size_t>(written) + 1 > kMaxLongDoubleChars) return 0;
  size_t length = static_cast<size_t>(written);
  if (std::memchr(buf, '.', length) != nullptr) {
    while (buf[length - 1] == '0') --length;
    if (buf[length - 1] == '.') --length;
  }
  if (length == 2 && buf[0] == '-' && buf[1] == '0') {
    buf[0] = '0';
    length = 1;
  }
  return length;
}

size_t FormatInt64(int64_t value, char* buf) {
  auto [end, ec] = std::to_chars(buf, buf + 20, value);
  (void)ec;  // 20 bytes hold INT64_MIN
  return static_cast<size_t>(end - buf);
}

}  // namespace keep::commands
