// Incremental RESP request parser: multibulk (`*N\r\n$L\r\n...`) and inline commands.
// It has no engine dependencies and never allocates per request once warmed up, so it can be
// fuzzed on its own and used on the shard hot path.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace keep::proto {

struct RespLimits {
  // Redis's proto-max-bulk-len: a larger announced bulk is a protocol error.
  size_t max_bulk_len = 512ull * 1024 * 1024;
  // Redis 7.0 refuses a multibulk count above INT_MAX (the old 1024*1024 cap went away in 7.0).
  // The parser never reserves space from the announced count, so a huge count costs nothing until
  // its arguments actually arrive; the caller's query-buffer cap bounds that.
  size_t max_multibulk_len = 2147483647;
  // Redis's PROTO_INLINE_MAX_SIZE: an inline request longer than this is an error.
  size_t max_inline_len = 64 * 1024;
};

enum class ParseStatus {
  kComplete,    // one request parsed; args and consumed are valid (args may be empty: skip it)
  kIncomplete,  // more bytes needed; nothing consumed
  kError,       // protocol error; error() holds Redis's text; the connection must be closed
};

// A hint for prefetching, not a parse: the view of argument `index` of the multibulk request at
// the front of `data` when every header line up to it is canonical (`*N`/`$L`, digits only) and
// its bytes have arrived; false otherwise. Nothing after that argument is looked at, so a request
// this accepts may still turn out malformed when RespParser reads it.
bool PeekMultibulkArgument(std::string_view data, size_t index, std::string_view* argument);

class RespParser {
 public:
  explicit RespParser(RespLimits limits = {}) : limits_(limits) {}

  // Parses one request from the front of `data`. On kComplete, `*args` holds the arguments
  // (views into `data`, or into this parser's scratch space for inline requests with quotes or
  // escapes; valid until the next Parse call) and `*consumed` the bytes used.
  ParseStatus Parse(std::string_view data, std::vector<std::string_view>* args, size_t* consumed);
  // The same, appending the arguments to `*args` (left as it was unless kComplete), so a caller
  // collecting a batch of requests needs no copy.
  ParseStatus ParseAppending(std::string_view data, std::vector<std::string_view>* args,
                             size_t* consumed);

  // After kError: the message without the leading '-', e.g.
  // "ERR Protocol error: invalid bulk length".
  const std::string& error() const { return error_; }

  // After kIncomplete: a lower bound on the buffer size that can complete this request, so a
  // caller can skip re-parsing until that many bytes are buffered (0 when unknown). It is set
  // while a bulk payload is awaited (payload end + 2): no verdict, error or success, can change
  // before then, so skipping never delays an error Redis would have sent.
  size_t needed() const { return needed_; }

  // Tests compare the canonical fast path with the general parse it short-cuts.
  void set_canonical_fast_path(bool enabled) { canonical_fast_path_ = enabled; }

 private:
  // A complete request of 1-9 arguments with canonical header lines (what clients send), in one
  // pass; false, with `*args` as it was, for anything else, which ParseMultibulk then reads.
  bool ParseCanonical(std::string_view data, std::vector<std::string_view>* args, size_t* consumed);
  ParseStatus ParseMultibulk(std::string_view data, std::vector<std::string_view>* args,
                             size_t* consumed);
  ParseStatus ParseInline(std::string_view data, std::vector<std::string_view>* args,
                          size_t* consumed);
  ParseStatus Fail(std::string_view message);

  RespLimits limits_;
  std::string error_;
  size_t needed_ = 0;
  std::string inline_scratch_;
  bool canonical_fast_path_ = true;
};

}  // namespace keep::proto
