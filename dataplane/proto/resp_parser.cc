#include "dataplane/proto/resp_parser.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace keep::proto {
namespace {

constexpr std::string_view kErrTooBigMbulkCount = "ERR Protocol error: too big mbulk count string";
constexpr std::string_view kErrInvalidMbulkLen = "ERR Protocol error: invalid multibulk length";
constexpr std::string_view kErrTooBigBulkCount = "ERR Protocol error: too big bulk count string";
constexpr std::string_view kErrInvalidBulkLen = "ERR Protocol error: invalid bulk length";
constexpr std::string_view kErrTooBigInline = "ERR Protocol error: too big inline request";
constexpr std::string_view kErrUnbalancedQuotes =
    "ERR Protocol error: unbalanced quotes in request";

constexpr size_t kNotFound = static_cast<size_t>(-1);

// Redis scans its NUL-terminated query buffer with strchr, so a NUL byte hides every delimiter
// after it: Redis keeps waiting (until its size limit) instead of seeing the line. Searching with
// memchr and then ruling out an earlier NUL reproduces that exactly while staying linear.
size_t FindDelimiter(const char* base, size_t from, size_t size, char delimiter) {
  const void* hit = std::memchr(base + from, delimiter, size - from);
  if (hit == nullptr) return kNotFound;
  size_t at = static_cast<const char*>(hit) - base;
  if (std::memchr(base + from, '\0', at - from) != nullptr) return kNotFound;
  return at;
}

// Redis's string2ll: optional '-', no '+', no leading zeros ("0" alone is fine, "-0" is not), no
// spaces, at most 20 characters, and the value must fit a long long.
bool StringToLongLong(const char* s, size_t len, int64_t* value) {
  if (len == 0 || len >= 21) return false;
  if (len == 1 && s[0] == '0') {
    *value = 0;
    return true;
  }
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    if (++i == len) return false;
  }
  if (s[i] < '1' || s[i] > '9') return false;
  uint64_t v = static_cast<uint64_t>(s[i++] - '0');
  for (; i < len; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    uint64_t digit = static_cast<uint64_t>(s[i] - '0');
    if (v > UINT64_MAX / 10) return false;
    v *= 10;
    if (v > UINT64_MAX - digit) return false;
    v += digit;
  }
  if (negative) {
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *value = static_cast<int64_t>(0 - v);  // wraps to INT64_MIN for 2^63, as Redis does
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *value = static_cast<int64_t>(v);
  }
  return true;
}

enum class LineResult { kOk, kIncomplete, kTooBig };

// Locates the `<type><digits>\r\n` header line starting at `pos`. On kOk, `*cr_at` is the offset
// of its '\r' (Redis never checks that '\n' follows it; it just skips two bytes), and when
// `*fast_ok` the line was `type` plus a canonical number, already decoded into `*fast_value`.
//
// The fast path handles what real clients send (a non-negative canonical number followed by
// '\r') with a single pass; anything else takes the slow path, which is a literal transcription
// of Redis's strchr/string2ll logic, so both paths agree byte for byte.
inline LineResult FindHeaderLine(const char* p, size_t pos, size_t n, char type,
                                 size_t max_unterminated, size_t* cr_at, bool* fast_ok,
                                 uint64_t* fast_value) {
  *fast_ok = false;
  size_t i = pos + 1;
  if (p[pos] == type && i < n && p[i] >= '0' && p[i] <= '9') {
    uint64_t v = static_cast<uint64_t>(p[i++] - '0');
    // 18 digits can never overflow; longer numbers go through the exact slow path, and so does
    // a leading zero followed by more digits (string2ll rejects it).
    size_t digit_limit = pos + 1 + 18;
    if (v != 0) {
      while (i < n && i < digit_limit && p[i] >= '0' && p[i] <= '9') {
        v = v * 10 + static_cast<uint64_t>(p[i++] - '0');
      }
    }
    if (i + 1 < n && p[i] == '\r') {
      *cr_at = i;
      *fast_ok = true;
      *fast_value = v;
      return LineResult::kOk;
    }
  }
  size_t cr = FindDelimiter(p, pos, n, '\r');
  if (cr == kNotFound) {
    return n - pos > max_unterminated ? LineResult::kTooBig : LineResult::kIncomplete;
  }
  // Redis wants one byte after '\r' (the '\n' it assumes) before it looks at the line.
  if (cr + 1 >= n) return LineResult::kIncomplete;
  *cr_at = cr;
  return LineResult::kOk;
}

bool IsCSpace(char c) {
  // isspace() in the C locale, which Redis runs its ctype calls under.
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

}  // namespace

bool PeekMultibulkArgument(std::string_view data, size_t index, std::string_view* argument) {
  const char* p = data.data();
  const size_t n = data.size();
  // Only the lines the parser's own fast path accepts (FindHeaderLine), so a hint never names
  // bytes the parse would read differently.
  auto header = [&](size_t* pos, char type, uint64_t* value) {
    size_t cr = 0;
    bool canonical = false;
    if (FindHeaderLine(p, *pos, n, type, n, &cr, &canonical, value) != LineResult::kOk ||
        !canonical) {
      return false;
    }
    *pos = cr + 2;
    return true;
  };
  size_t pos = 0;
  uint64_t count = 0;
  if (n == 0 || !header(&pos, '*', &count) || index >= count) return false;
  for (size_t i = 0;; ++i) {
    uint64_t length = 0;
    if (pos >= n || !header(&pos, '$', &length) || n - pos < length) return false;
    if (i == index) {
      *argument = data.substr(pos, length);
      return true;
    }
    if (n - pos < length + 2) return false;
    pos += length + 2;
  }
}

ParseStatus RespParser::Parse(std::string_view data, std::vector<std::string_view>* args,
                              size_t* consumed) {
  args->clear();
  return ParseAppending(data, args, consumed);
}

// Inlined into ParseAppending: the calls down to ParseMultibulk cost as much as this whole parse.
[[gnu::always_inline]] inline bool RespParser::ParseCanonical(std::string_view data,
                                                              std::vector<std::string_view>* args,
                                                              size_t* consumed) {
  const char* const p = data.data();
  const char* const end = p + data.size();
  // "*<1-9>\r" and the byte after it (Redis skips it unread).
  if (data.size() < 4 || static_cast<unsigned char>(p[1] - '1') > 8 || p[2] != '\r') return false;
  const auto count = static_cast<size_t>(p[1] - '0');
  if (count > limits_.max_multibulk_len) return false;
  const size_t first = args->size();
  if (args->capacity() < first + count) args->reserve(first + count);
  const char* at = p + 4;
  for (size_t i = 0; i < count; ++i) {
    // "$<length>\r" and one byte: one digit, or up to kMaxLengthDigits without a leading zero.
    constexpr ptrdiff_t kMaxLengthDigits = 5;
    if (end - at < 4 || at[0] != '$') break;
    auto digit = static_cast<unsigned char>(at[1] - '0');
    if (digit > 9) break;
    size_t length = digit;
    const char* cursor = at + 2;
    if (*cursor != '\r') {
      if (length == 0) break;
      const char* const digits_end = at + 1 + std::min(kMaxLengthDigits, end - (at + 1));
      while (cursor < digits_end && (digit = static_cast<unsigned char>(*cursor - '0')) <= 9) {
        length = length * 10 + digit;
        ++cursor;
      }
      if (end - cursor < 2 || *cursor != '\r') break;
    }
    cursor += 2;
    if (length > limits_.max_bulk_len || static_cast<size_t>(end - cursor) < length + 2) break;
    args->emplace_back(cursor, length);
    at = cursor + length + 2;
  }
  if (args->size() - first != count) {
    args->resize(first);
    return false;
  }
  *consumed = static_cast<size_t>(at - p);
  return true;
}

ParseStatus RespParser::ParseAppending(std::string_view data, std::vector<std::string_view>* args,
                                       size_t* consumed) {
  needed_ = 0;
  if (canonical_fast_path_ && !data.empty() && data[0] == '*' &&
      ParseCanonical(data, args, consumed)) {
    return ParseStatus::kComplete;
  }
  *consumed = 0;
  if (data.empty()) return ParseStatus::kIncomplete;
  const size_t before = args->size();
  const ParseStatus status =
      data[0] == '*' ? ParseMultibulk(data, args, consumed) : ParseInline(data, args, consumed);
  if (status != ParseStatus::kComplete) args->resize(before);
  return status;
}

ParseStatus RespParser::Fail(std::string_view message) {
  error_.assign(message);
  return ParseStatus::kError;
}

ParseStatus RespParser::ParseMultibulk(std::string_view data, std::vector<std::string_view>* args,
                                       size_t* consumed) {
  const char* p = data.data();
  const size_t n = data.size();

  size_t cr = 0;
  bool fast_ok = false;
  uint64_t fast_value = 0;
  switch (FindHeaderLine(p, 0, n, '*', limits_.max_inline_len, &cr, &fast_ok, &fast_value)) {
    case LineResult::kIncomplete:
      return ParseStatus::kIncomplete;
    case LineResult::kTooBig:
      return Fail(kErrTooBigMbulkCount);
    case LineResult::kOk:
      break;
  }
  uint64_t count = 0;
  if (fast_ok) {
    if (fast_value > limits_.max_multibulk_len) return Fail(kErrInvalidMbulkLen);
    count = fast_value;
  } else {
    int64_t ll = 0;
    if (!StringToLongLong(p + 1, cr - 1, &ll)) return Fail(kErrInvalidMbulkLen);
    if (ll > 0 && static_cast<uint64_t>(ll) > limits_.max_multibulk_len) {
      return Fail(kErrInvalidMbulkLen);
    }
    // Redis treats *0 and any negative count as an empty request and moves on.
    count = ll > 0 ? static_cast<uint64_t>(ll) : 0;
  }
  size_t pos = cr + 2;
  if (count == 0) {
    *consumed = pos;
    return ParseStatus::kComplete;
  }
  // Reserve only a bounded amount up front: the count is attacker-controlled and every argument
  // must actually arrive (at least 6 bytes each) before it costs more memory.
  if (args->capacity() < args->size() + count && count <= 1024) args->reserve(args->size() + count);

  for (uint64_t i = 0; i < count; ++i) {
    if (pos >= n) return ParseStatus::kIncomplete;
    switch (FindHeaderLine(p, pos, n, '$', limits_.max_inline_len, &cr, &fast_ok, &fast_value)) {
      case LineResult::kIncomplete:
        return ParseStatus::kIncomplete;
      case LineResult::kTooBig:
        return Fail(kErrTooBigBulkCount);
      case LineResult::kOk:
        break;
    }
    if (p[pos] != '$') {
      // Redis formats the byte with %c and then maps \r and \n to spaces.
      char got = p[pos] == '\r' || p[pos] == '\n' ? ' ' : p[pos];
      error_.assign("ERR Protocol error: expected '$', got '");
      error_.push_back(got);
      error_.push_back('\'');
      return ParseStatus::kError;
    }
    uint64_t len = 0;
    if (fast_ok) {
      len = fast_value;
    } else {
      int64_t ll = 0;
      if (!StringToLongLong(p + pos + 1, cr - pos - 1, &ll) || ll < 0) {
        return Fail(kErrInvalidBulkLen);
      }
      len = static_cast<uint64_t>(ll);
    }
    if (len > limits_.max_bulk_len) return Fail(kErrInvalidBulkLen);
    pos = cr + 2;
    // Redis takes the payload and skips the two bytes after it without checking they are \r\n.
    if (n - pos < len + 2) {
      needed_ = pos + len + 2;
      return ParseStatus::kIncomplete;
    }
    args->emplace_back(p + pos, len);
    pos += len + 2;
  }
  *consumed = pos;
  return ParseStatus::kComplete;
}

ParseStatus RespParser::ParseInline(std::string_view data, std::vector<std::string_view>* args,
                                    size_t* consumed) {
  const char* p = data.data();
  const size_t n = data.size();
  size_t newline = FindDelimiter(p, 0, n, '\n');
  if (newline == kNotFound) {
    if (n > limits_.max_inline_len) return Fail(kErrTooBigInline);
    return ParseStatus::kIncomplete;
  }
  size_t line_end = newline;
  if (line_end > 0 && p[line_end - 1] == '\r') --line_end;

  // The unescaped form of a line is never longer than the line, so reserving its length up front
  // means the scratch buffer never reallocates while views into it are being handed out.
  inline_scratch_.clear();
  inline_scratch_.reserve(line_end);

  // Mirrors sdssplitargs. The line holds no NUL (FindDelimiter saw to that), so "end of line"
  // plays the role of sdssplitargs's terminating NUL.
  size_t i = 0;
  while (true) {
    while (i < line_end && IsCSpace(p[i])) ++i;
    if (i == line_end) break;

    // A token stays a view into `data` while its bytes are a contiguous run of the input; the
    // first escape or quote boundary moves it into scratch.
    const char* run_begin = nullptr;
    size_t run_len = 0;
    bool in_scratch = false;
    size_t scratch_begin = 0;
    auto spill = [&] {
      in_scratch = true;
      scratch_begin = inline_scratch_.size();
      if (run_len > 0) inline_scratch_.append(run_begin, run_len);
    };
    auto append_input = [&](size_t at) {
      if (!in_scratch) {
        if (run_len == 0) {
          run_begin = p + at;
          run_len = 1;
          return;
        }
        if (run_begin + run_len == p + at) {
          ++run_len;
          return;
        }
        spill();
      }
      inline_scratch_.push_back(p[at]);
    };
    auto append_byte = [&](char c) {
      if (!in_scratch) spill();
      inline_scratch_.push_back(c);
    };

    bool in_double = false;
    bool in_single = false;
    bool done = false;
    while (!done) {
      bool at_end = i >= line_end;
      if (in_double) {
        if (at_end) return Fail(kErrUnbalancedQuotes);
        if (p[i] == '\\' && i + 3 < line_end && p[i + 1] == 'x' && IsHexDigit(p[i + 2]) &&
            IsHexDigit(p[i + 3])) {
          append_byte(static_cast<char>(HexValue(p[i + 2]) * 16 + HexValue(p[i + 3])));
          i += 3;
        } else if (p[i] == '\\' && i + 1 < line_end) {
          ++i;
          char c;
          switch (p[i]) {
            case 'n':
              c = '\n';
              break;
            case 'r':
              c = '\r';
              break;
            case 't':
              c = '\t';
              break;
            case 'b':
              c = '\b';
              break;
            case 'a':
              c = '\a';
              break;
            default:
              c = p[i];
              break;
          }
          append_byte(c);
        } else if (p[i] == '"') {
          // The closing quote must be followed by a space or the end of the line.
          if (i + 1 < line_end && !IsCSpace(p[i + 1])) return Fail(kErrUnbalancedQuotes);
          done = true;
        } else {
          append_input(i);
        }
      } else if (in_single) {
        if (at_end) return Fail(kErrUnbalancedQuotes);
        if (p[i] == '\\' && i + 1 < line_end && p[i + 1] == '\'') {
          ++i;
          append_byte('\'');
        } else if (p[i] == '\'') {
          if (i + 1 < line_end && !IsCSpace(p[i + 1])) return Fail(kErrUnbalancedQuotes);
          done = true;
        } else {
          append_input(i);
        }
      } else if (at_end) {
        done = true;
      } else {
        switch (p[i]) {
          // Unlike the blank skipping above, only these end a bare token: \v and \f do not.
          case ' ':
          case '\n':
          case '\r':
          case '\t':
            done = true;
            break;
          case '"':
            in_double = true;
            break;
          case '\'':
            in_single = true;
            break;
          default:
            append_input(i);
            break;
        }
      }
      if (i < line_end) ++i;
    }
    if (in_scratch) {
      args->emplace_back(inline_scratch_.data() + scratch_begin,
                         inline_scratch_.size() - scratch_begin);
    } else {
      // An empty token (from "" or '') has no run: any non-null pointer with length 0 will do.
      args->emplace_back(run_len > 0 ? run_begin : p + i, run_len);
    }
  }
  *consumed = newline + 1;
  return ParseStatus::kComplete;
}

}  // namespace keep::proto
