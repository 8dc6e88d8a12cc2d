#include "bench/keep_bench/protocol.h"

#include "bench/keep_bench/resp_codec.h"

namespace keep::bench {

std::unique_ptr<Codec> MakeCodec(Protocol protocol, std::string* error) {
  switch (protocol) {
    case Protocol::kResp:
      return std::make_unique<RespCodec>();
    case Protocol::kBinary:
      // The flag is accepted so scripts can already name it; there is no codec to run it with.
      *error =
          "--protocol binary: the binary protocol is not available in this build of keep-bench "
          "(no binary codec is compiled in; use --protocol resp)";
      return nullptr;
  }
  *error = "unknown protocol";
  return nullptr;
}

}  // namespace keep::bench
