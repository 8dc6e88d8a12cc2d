// RESP2/RESP3 reply encoder appending to a caller-owned buffer. The protocol version decides how
// RESP3-only types degrade on RESP2 (maps become flat arrays, null becomes $-1 or *-1, doubles
// become bulk strings, booleans integers), exactly as Redis 7 does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace keep::proto {

class ReplyWriter {
 public:
  ReplyWriter(std::string* out, int resp_version) : out_(out), resp_version_(resp_version) {}

  int resp_version() const { return resp_version_; }
  std::string* buffer() { return out_; }

  void Ok() { Raw("+OK\r\n"); }
  void Simple(std::string_view text);  // +text (CR and LF become spaces, as in Error)
  // `message` starts with the error code, e.g. "ERR wrong number of arguments for 'get' command"
  // or "WRONGTYPE Operation against a key holding the wrong kind of value".
  void Error(std::string_view message);
  void Integer(int64_t value);
  void Bulk(std::string_view bytes);
  void Null();       // RESP2 "$-1", RESP3 "_"
  void NullArray();  // RESP2 "*-1", RESP3 "_"
  void ArrayHeader(size_t count);
  void MapHeader(size_t pairs);   // RESP2: array of 2*pairs
  void SetHeader(size_t count);   // RESP2: array
  void PushHeader(size_t count);  // RESP2: array
  void Double(double value);      // RESP2: bulk string formatted as Redis does ("%.17g" style)
  void Bool(bool value);          // RESP2: integer 1/0
  void Verbatim(std::string_view format, std::string_view text);  // RESP2: bulk string
  void Raw(std::string_view bytes) { out_->append(bytes); }

 private:
  void Header(char type, int64_t value);

  std::string* out_;
  int resp_version_;
};

}  // namespace keep::proto
