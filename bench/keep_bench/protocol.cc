#include "bench/keep_bench/protocol.h"

#include "bench/keep_bench/resp_codec.h"

namespace keep::bench {

std::unique_ptr<Codec> MakeCodec(Protocol protocol, std::string* error) {
  switch (protocol) {
    case Protocol::kResp:
      return std::make_unique<RespCodec>();
    case Protocol::kBinary:
      // The binary protocol runs through libkeep (binary_driver.h), not through a codec.
      *error = "--protocol binary runs through libkeep (binary_driver.h), not a codec";
      return nullptr;
  }
  *error = "unknown protocol";
  return nullptr;
}

}  // namespace keep::bench
