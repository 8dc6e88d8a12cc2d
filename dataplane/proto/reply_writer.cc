#include "dataplane/proto/reply_writer.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace keep::proto {
namespace {

// Redis's addReplyErrorFormat/addReplyStatusFormat map these to spaces: a CR or LF inside a
// one-line reply would let the client read the rest as another reply.
void ReplaceNewlines(std::string* out, size_t from) {
  for (size_t i = from; i < out->size(); ++i) {
    char& c = (*out)[i];
    if (c == '\r' || c == '\n') c = ' ';
  }
}

constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

}  // namespace

void ReplyWriter::Header(char type, int64_t value) {
  // 1 type byte + 20 for INT64_MIN + CRLF.
  char buf[24];
  buf[0] = type;
  auto [end, ec] = std::to_chars(buf + 1, buf + sizeof(buf) - 2, value);
  (void)ec;  // cannot fail: the buffer fits any int64_t
  end[0] = '\r';
  end[1] = '\n';
  out_->append(buf, end + 2 - buf);
}

void ReplyWriter::Simple(std::string_view text) {
  out_->push_back('+');
  size_t from = out_->size();
  out_->append(text);
  ReplaceNewlines(out_, from);
  out_->append("\r\n", 2);
}

void ReplyWriter::Error(std::string_view message) {
  out_->push_back('-');
  size_t from = out_->size();
  out_->append(message);
  ReplaceNewlines(out_, from);
  out_->append("\r\n", 2);
}

void ReplyWriter::Integer(int64_t value) { Header(':', value); }

void ReplyWriter::Bulk(std::string_view bytes) {
  const size_t old_size = out_->size();
  if (bytes.data() >= out_->data() && bytes.data() < out_->data() + old_size) {
    // The value lives in this very buffer, which growing it may move: append copies it first.
    Header('$', static_cast<int64_t>(bytes.size()));
    out_->append(bytes);
    out_->append("\r\n", 2);
    return;
  }
  // One resize and the copies instead of three appends (the most common reply of all). Values
  // under 10000 bytes have their length written digit by digit: std::to_chars was a third of
  // this function's instructions.
  const size_t length = bytes.size();
  const size_t digits = length < 10      ? 1
                        : length < 100   ? 2
                        : length < 1000  ? 3
                        : length < 10000 ? 4
                                         : 0;
  char header[24];
  header[0] = '$';
  const size_t header_size =
      digits != 0 ? 1 + digits
                  : static_cast<size_t>(
                        std::to_chars(header + 1, header + sizeof(header), length).ptr - header);
  out_->resize(old_size + header_size + 2 + length + 2);
  char* at = out_->data() + old_size;
  if (digits != 0) {
    at[0] = '$';
    if (digits <= 2) {
      if (digits == 1) at[1] = static_cast<char>('0' + length);
      if (digits == 2) std::memcpy(at + 1, kDigitPairs + 2 * length, 2);
    } else {
      // The last two digits, then the one or two before them.
      std::memcpy(at + digits - 1, kDigitPairs + 2 * (length % 100), 2);
      if (digits == 3) at[1] = static_cast<char>('0' + length / 100);
      if (digits == 4) std::memcpy(at + 1, kDigitPairs + 2 * (length / 100), 2);
    }
  } else {
    std::memcpy(at, header, header_size);
  }
  at += header_size;
  at[0] = '\r';
  at[1] = '\n';
  std::memcpy(at + 2, bytes.data(), bytes.size());
  at += 2 + bytes.size();
  at[0] = '\r';
  at[1] = '\n';
}

void ReplyWriter::Null() {
  if (resp_version_ >= 3) {
    Raw("_\r\n");
  } else {
    Raw("$-1\r\n");
  }
}

void ReplyWriter::NullArray() {
  if (resp_version_ >= 3) {
    Raw("_\r\n");
  } else {
    Raw("*-1\r\n");
  }
}

void ReplyWriter::ArrayHeader(size_t count) { Header('*', static_cast<int64_t>(count)); }

void ReplyWriter::MapHeader(size_t pairs) {
  if (resp_version_ >= 3) {
    Header('%', static_cast<int64_t>(pairs));
  } else {
    Header('*', static_cast<int64_t>(pairs * 2));
  }
}

void ReplyWriter::SetHeader(size_t count) {
  Header(resp_version_ >= 3 ? '~' : '*', static_cast<int64_t>(count));
}

void ReplyWriter::PushHeader(size_t count) {
  Header(resp_version_ >= 3 ? '>' : '*', static_cast<int64_t>(count));
}

void ReplyWriter::Double(double value) {
  // Redis 7.0's addReplyDouble spells infinities out itself and prints everything else with
  // "%.17g"; to_chars with general format and precision 17 is specified to produce the same
  // text (NaN included: "nan" or "-nan" depending on the sign bit, as glibc prints it).
  if (std::isinf(value)) {
    if (resp_version_ >= 3) {
      Raw(value > 0 ? std::string_view(",inf\r\n") : std::string_view(",-inf\r\n"));
    } else {
      Bulk(value > 0 ? "inf" : "-inf");
    }
    return;
  }
  // %.17g needs at most 24 characters ("-1.2345678901234567e-308").
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::general, 17);
  (void)ec;  // cannot fail: the buffer fits any double at this precision
  std::string_view text(buf, end - buf);
  if (resp_version_ >= 3) {
    out_->push_back(',');
    out_->append(text);
    out_->append("\r\n", 2);
  } else {
    Bulk(text);
  }
}

void ReplyWriter::Bool(bool value) {
  if (resp_version_ >= 3) {
    Raw(value ? "#t\r\n" : "#f\r\n");
  } else {
    Raw(value ? ":1\r\n" : ":0\r\n");
  }
}

void ReplyWriter::Verbatim(std::string_view format, std::string_view text) {
  if (resp_version_ < 3) {
    Bulk(text);
    return;
  }
  // Like addReplyVerbatim, the format is exactly three bytes: truncated, or padded with spaces
  // (Redis reads it as a C string, so a NUL ends it too).
  Header('=', static_cast<int64_t>(text.size() + 4));
  char ext[4] = {' ', ' ', ' ', ':'};
  for (size_t i = 0; i < 3 && i < format.size() && format[i] != '\0'; ++i) ext[i] = format[i];
  out_->append(ext, sizeof(ext));
  out_->append(text);
  out_->append("\r\n", 2);
}

}  // namespace keep::proto
