// The wire-protocol seam of keep-bench: a codec encodes a command into a request template (with
// the offsets of its arguments, so the driver can patch keys in place without re-encoding) and
// cuts replies out of the received bytes. RESP is the only codec built today; a binary codec plugs
// in behind MakeCodec. Note for that codec: RESP replies come back in request order, which the
// driver relies on (it matches replies to a FIFO of in-flight requests); binary replies carry a
// request id and may come back in any order, so the driver will need to match by id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/keep_bench/options.h"

namespace keep::bench {

enum class ParseStatus { kComplete, kIncomplete, kInvalid };
enum class ReplyKind { kOk, kNil, kError, kInteger, kOther };

struct Reply {
  ParseStatus status = ParseStatus::kIncomplete;
  // Bytes the reply took when complete.
  size_t consumed = 0;
  ReplyKind kind = ReplyKind::kOther;
  // kInteger: the value.
  int64_t integer = 0;
  // kError: the error text; kOther: the payload of a top-level simple or bulk string. A view into
  // the parsed buffer, valid until the caller consumes the bytes.
  std::string_view text;
};

class Codec {
 public:
  virtual ~Codec() = default;
  virtual const char* Name() const = 0;
  // Appends the encoding of one command to *out; when offsets is given, appends the position in
  // *out of each argument's first byte, so a fixed-width argument can be overwritten in place.
  virtual void Encode(std::span<const std::string_view> args, std::string* out,
                      std::vector<size_t>* offsets) const = 0;
  // Parses the first reply in `in`; a kInvalid reply means the stream cannot be trusted anymore.
  virtual Reply Parse(std::string_view in) const = 0;
};

// nullptr with *error set when the protocol has no codec in this build.
std::unique_ptr<Codec> MakeCodec(Protocol protocol, std::string* error);

}  // namespace keep::bench
