#include "bench/keep_bench/resp_codec.h"

#include <cstring>

namespace keep::bench {
namespace {

constexpr int kMaxDepth = 32;
constexpr int64_t kMaxBulk = int64_t{512} << 20;
constexpr int64_t kMaxElements = int64_t{1} << 31;

// Finds the line starting at pos; false when its CRLF has not arrived. *bad when a CR is followed
// by something other than LF (the line can never complete).
bool FindLine(std::string_view in, size_t pos, size_t* line_end, bool* bad) {
  const void* cr = std::memchr(in.data() + pos, '\r', in.size() - pos);
  if (cr == nullptr) return false;
  size_t at = static_cast<const char*>(cr) - in.data();
  if (at + 1 >= in.size()) return false;
  if (in[at + 1] != '\n') {
    *bad = true;
    return false;
  }
  *line_end = at;
  return true;
}

bool ParseInt(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  bool negative = text[0] == '-';
  size_t i = negative ? 1 : 0;
  if (i == text.size()) return false;
  uint64_t value = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c < '0' || c > '9') return false;
    uint64_t next = value * 10 + static_cast<uint64_t>(c - '0');
    if (next / 10 != value) return false;
    value = next;
  }
  if (!negative && value > static_cast<uint64_t>(INT64_MAX)) return false;
  if (negative && value > static_cast<uint64_t>(INT64_MAX) + 1) return false;
  *out = negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
  return true;
}

// Parses one value starting at pos. Sets *end past it on kComplete.
ParseStatus ParseValue(std::string_view in, size_t pos, int depth, size_t* end, Reply* top) {
  if (depth > kMaxDepth) return ParseStatus::kInvalid;
  if (pos >= in.size()) return ParseStatus::kIncomplete;
  char type = in[pos];
  size_t line_end = 0;
  bool bad = false;
  if (!FindLine(in, pos + 1, &line_end, &bad)) {
    return bad ? ParseStatus::kInvalid : ParseStatus::kIncomplete;
  }
  std::string_view line = in.substr(pos + 1, line_end - pos - 1);
  size_t after = line_end + 2;
  bool is_top = depth == 0;
  switch (type) {
    case '+':
      if (is_top) {
        top->kind = line == "OK" ? ReplyKind::kOk : ReplyKind::kOther;
        top->text = line;
      }
      *end = after;
      return ParseStatus::kComplete;
    case '-':
      if (is_top) {
        top->kind = ReplyKind::kError;
        top->text = line;
      }
      *end = after;
      return ParseStatus::kComplete;
    case ':': {
      int64_t value = 0;
      if (!ParseInt(line, &value)) return ParseStatus::kInvalid;
      if (is_top) {
        top->kind = ReplyKind::kInteger;
        top->integer = value;
      }
      *end = after;
      return ParseStatus::kComplete;
    }
    case '_':
      if (!line.empty()) return ParseStatus::kInvalid;
      if (is_top) top->kind = ReplyKind::kNil;
      *end = after;
      return ParseStatus::kComplete;
    case ',':
    case '#':
    case '(':
      if (line.empty()) return ParseStatus::kInvalid;
      if (is_top) top->kind = ReplyKind::kOther;
      *end = after;
      return ParseStatus::kComplete;
    case '$':
    case '!':
    case '=': {
      int64_t len = 0;
      if (!ParseInt(line, &len) || len < -1 || len > kMaxBulk) return ParseStatus::kInvalid;
      if (len == -1) {
        if (type != '$') return ParseStatus::kInvalid;
        if (is_top) top->kind = ReplyKind::kNil;
        *end = after;
        return ParseStatus::kComplete;
      }
      size_t need = after + static_cast<size_t>(len) + 2;
      if (in.size() < need) return ParseStatus::kIncomplete;
      if (in[need - 2] != '\r' || in[need - 1] != '\n') return ParseStatus::kInvalid;
      if (is_top) {
        top->kind = type == '!' ? ReplyKind::kError : ReplyKind::kOther;
        top->text = in.substr(after, static_cast<size_t>(len));
      }
      *end = need;
      return ParseStatus::kComplete;
    }
    case '*':
    case '~':
    case '>':
    case '%': {
      int64_t count = 0;
      if (!ParseInt(line, &count) || count < -1 || count > kMaxElements) {
        return ParseStatus::kInvalid;
      }
      if (count == -1) {
        if (type != '*') return ParseStatus::kInvalid;
        if (is_top) top->kind = ReplyKind::kNil;
        *end = after;
        return ParseStatus::kComplete;
      }
      if (type == '%') count *= 2;
      size_t next = after;
      for (int64_t i = 0; i < count; ++i) {
        ParseStatus status = ParseValue(in, next, depth + 1, &next, top);
        if (status != ParseStatus::kComplete) return status;
      }
      if (is_top) top->kind = ReplyKind::kOther;
      *end = next;
      return ParseStatus::kComplete;
    }
    default:
      return ParseStatus::kInvalid;
  }
}

void AppendNumber(std::string* out, size_t n) {
  char digits[24];
  int len = 0;
  do {
    digits[len++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  while (len > 0) out->push_back(digits[--len]);
}

}  // namespace

void RespCodec::Encode(std::span<const std::string_view> args, std::string* out,
                       std::vector<size_t>* offsets) const {
  out->push_back('*');
  AppendNumber(out, args.size());
  out->append("\r\n");
  for (std::string_view arg : args) {
    out->push_back('$');
    AppendNumber(out, arg.size());
    out->append("\r\n");
    if (offsets != nullptr) offsets->push_back(out->size());
    out->append(arg);
    out->append("\r\n");
  }
}

Reply RespCodec::Parse(std::string_view in) const {
  Reply reply;
  size_t end = 0;
  reply.status = ParseValue(in, 0, 0, &end, &reply);
  if (reply.status == ParseStatus::kComplete) {
    reply.consumed = end;
  } else {
    reply.kind = ReplyKind::kOther;
    reply.text = {};
  }
  return reply;
}

}  // namespace keep::bench
