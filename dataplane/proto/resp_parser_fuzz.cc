// libFuzzer target for RespParser: parses the input as a pipelined stream and checks the
// invariants the shard loop relies on. An input whose first byte has the high bit set uses that
// byte to pick small limits (and is not parsed), so the size-limit paths are reachable with
// short inputs; the committed corpus in fuzz_corpus/resp has seeds of both kinds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/proto/resp_parser.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

bool Inside(std::string_view part, const char* begin, size_t size) {
  if (part.empty()) return true;
  return part.data() >= begin && part.data() + part.size() <= begin + size;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using keep::proto::ParseStatus;
  using keep::proto::RespLimits;
  using keep::proto::RespParser;

  RespLimits limits;
  if (size > 0 && (data[0] & 0x80) != 0) {
    limits.max_inline_len = 1 + (data[0] & 0x0f);
    limits.max_bulk_len = 1 + ((data[0] >> 4) & 0x07) * 4;
    limits.max_multibulk_len = 1 + (data[0] & 0x07);
    ++data;
    --size;
  }
  // A heap copy of exactly `size` bytes, so ASan flags any read past the end.
  std::string owned(reinterpret_cast<const char*>(data), size);
  std::string_view input(owned);

  RespParser parser(limits);
  std::vector<std::string_view> args;
  size_t offset = 0;
  while (true) {
    std::string_view rest = input.substr(offset);
    // The prefetch hint reads only bytes of `rest`, and where the parse completes it names the
    // very bytes the parse hands out.
    std::string_view peeked[2];
    bool peek_ok[2];
    for (size_t index = 0; index < 2; ++index) {
      peek_ok[index] = keep::proto::PeekMultibulkArgument(rest, index, &peeked[index]);
      if (peek_ok[index]) Check(Inside(peeked[index], rest.data(), rest.size()));
    }
    size_t consumed = 12345;
    ParseStatus status = parser.Parse(rest, &args, &consumed);
    if (status == ParseStatus::kComplete) {
      for (size_t index = 0; index < 2; ++index) {
        if (!peek_ok[index]) continue;
        Check(index < args.size());
        Check(peeked[index].data() == args[index].data() &&
              peeked[index].size() == args[index].size());
      }
    }
    if (status == ParseStatus::kIncomplete) {
      Check(consumed == 0);
      Check(parser.needed() == 0 || parser.needed() > rest.size());
      if (parser.needed() != 0) {
        // Nothing may change before `needed` bytes: a longer prefix still waits.
        std::string longer(rest);
        longer.resize(
            parser.needed() - 1 < rest.size() + 64 ? parser.needed() - 1 : rest.size() + 64, 'x');
        size_t c = 0;
        Check(parser.Parse(longer, &args, &c) == ParseStatus::kIncomplete);
      }
      break;
    }
    if (status == ParseStatus::kError) {
      Check(consumed == 0);
      Check(parser.error().rfind("ERR Protocol error: ", 0) == 0);
      Check(parser.error().find_first_of("\r\n") == std::string::npos);
      break;
    }
    Check(status == ParseStatus::kComplete);
    Check(consumed > 0);
    Check(consumed <= rest.size());
    size_t arg_bytes = 0;
    for (std::string_view a : args) {
      // Inline args may live in the parser's scratch space; multibulk args never do.
      if (!rest.empty() && rest[0] == '*') Check(Inside(a, rest.data(), consumed));
      arg_bytes += a.size();
    }
    Check(arg_bytes <= consumed);
    // A prefix of a complete request must never complete with a different length.
    if (consumed > 1) {
      size_t c = 0;
      std::vector<std::string_view> prefix_args;
      ParseStatus prefix_status = parser.Parse(rest.substr(0, consumed - 1), &prefix_args, &c);
      Check(prefix_status != ParseStatus::kComplete || c < consumed);
    }
    offset += consumed;
  }
  return 0;
}
