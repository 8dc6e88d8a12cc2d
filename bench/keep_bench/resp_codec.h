// RESP codec for keep-bench: requests as RESP2 arrays of bulk strings, and a small reply parser of
// its own (RESP2 plus the RESP3 scalar and aggregate types) that only classifies replies; it does
// not depend on dataplane/proto so the load generator stays usable while the server's protocol
// layer changes. (dataplane/proto has a request parser and a reply writer, not a reply parser.)
#pragma once

#include "bench/keep_bench/protocol.h"

namespace keep::bench {

class RespCodec final : public Codec {
 public:
  const char* Name() const override { return "resp"; }
  void Encode(std::span<const std::string_view> args, std::string* out,
              std::vector<size_t>* offsets) const override;
  Reply Parse(std::string_view in) const override;
};

}  // namespace keep::bench
