// Keep's binary protocol (binary_protocol.md): frame decoding and encoding, and the mapping of
// typed ops onto RESP command vectors and back. No engine dependencies; the decode path never
// throws and never allocates from an announced length, so it can run on the shard hot path and be
// fuzzed on its own. Decoded frames are views into the caller's buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keep::proto::binary {

inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kPrefaceSize = 4;
inline constexpr size_t kNonceSize = 16;
inline constexpr size_t kProofSize = 32;  // HMAC-SHA256
// Everything after the u32 length: id, op/status, flags, key_len/reserved.
inline constexpr size_t kHeaderAfterLength = 8;
inline constexpr size_t kFrameHeaderSize = 4 + kHeaderAfterLength;
inline constexpr size_t kMaxKeyLen = 0xffff;
// Ids 1..2^32-1 are the client's; 0 is connection-level frames (server preface, fatal errors).
inline constexpr uint32_t kConnectionId = 0;
// Keys map to slots 0..kSlotCount-1 (TOPOLOGY's ranges, MOVED's slot).
inline constexpr uint32_t kSlotCount = 16384;

enum class Op : uint8_t {
  kHello = 0x01,
  kPing = 0x02,
  kGet = 0x03,
  kSet = 0x04,
  kDel = 0x05,
  kExists = 0x06,
  kIncr = 0x07,
  kExpire = 0x08,
  kLock = 0x09,
  kUnlock = 0x0a,
  kExtend = 0x0b,
  kThrottle = 0x0c,
  kFixedWindow = 0x0d,
  kDelPrefix = 0x0e,
  kPublish = 0x0f,
  kSubscribe = 0x10,
  kUnsubscribe = 0x11,
  kTopology = 0x12,
  kCommand = 0x13,
};
inline constexpr uint8_t kMaxOp = 0x13;

enum class Status : uint8_t {
  kOk = 0x00,
  kNil = 0x01,
  kError = 0x02,
  kBusy = 0x03,
  kMoved = 0x04,
  kFenced = 0x05,
  kLocked = 0x06,
  kOom = 0x07,
  kWrongType = 0x08,
  kTooLarge = 0x09,
  kAuth = 0x0a,
};
inline constexpr uint8_t kMaxStatus = 0x0a;

// Request flags (meaning depends on the op; bits an op does not define must be zero).
inline constexpr uint8_t kSetNx = 0x01;
inline constexpr uint8_t kSetXx = 0x02;
inline constexpr uint8_t kSetGet = 0x04;
inline constexpr uint8_t kSetKeepTtl = 0x08;
inline constexpr uint8_t kExpireNx = 0x01;
inline constexpr uint8_t kExpireXx = 0x02;
inline constexpr uint8_t kExpireGt = 0x04;
inline constexpr uint8_t kExpireLt = 0x08;
inline constexpr uint8_t kHelloResp3 = 0x01;        // COMMAND replies in RESP3 instead of RESP2
inline constexpr uint8_t kSubscribePattern = 0x01;  // PSUBSCRIBE semantics

// Reply flags.
inline constexpr uint8_t kReplyEvent = 0x01;      // server-initiated: id is a subscription id
inline constexpr uint8_t kReplyHeartbeat = 0x02;  // with kReplyEvent: no message, just the number
inline constexpr uint8_t kReplyPreface = 0x04;    // id 0: the server preface (carries the nonce)

std::string_view OpName(Op op);         // "GET", ... ; "UNKNOWN" for codes outside the table
std::string_view StatusName(Status s);  // "OK", ... ; "UNKNOWN" likewise
bool IsKnownOp(uint8_t code);
// The request flag bits `op` defines; a request with any other bit set is malformed.
uint8_t AllowedFlags(Op op);

struct Limits {
  // --max-value-size; a request frame may be 1 MiB larger (key, options, command framing).
  size_t max_value_size = 16ull * 1024 * 1024;
  // Beyond max_frame_len() but up to this, a request is answered TOO_LARGE and skipped (its bytes
  // are discarded as they arrive, never buffered); beyond this the connection is closed.
  size_t max_skip_len = 256ull * 1024 * 1024;
  // COMMAND argument count cap (a count above it is malformed; no reservation is made from it).
  size_t max_command_args = 1024 * 1024;
  size_t max_frame_len() const { return (1ull << 20) + max_value_size; }
};

enum class DecodeStatus {
  kComplete,    // one frame decoded; the view and `consumed` are valid
  kIncomplete,  // more bytes needed; nothing consumed; needed() says how many, if known
  kSkip,        // a well-delimited request that cannot be served: answer skip_status() with
                // skip_text() under skip_id(), then discard skip_bytes() (may exceed the buffer)
  kError,       // framing is broken: answer ERROR with error() under id 0, then close
};

struct RequestView {
  uint32_t id = 0;
  Op op = Op::kPing;
  uint8_t flags = 0;
  std::string_view key;
  std::string_view body;
};

struct ReplyView {
  uint32_t id = 0;
  Status status = Status::kOk;
  uint8_t flags = 0;
  std::string_view body;
};

// Checks the 4-byte connection preface `00 'K' 'P' version`. kComplete sets *version (the caller
// decides whether it speaks it); kError means the bytes are not a Keep preface at all.
DecodeStatus DecodePreface(std::string_view data, uint8_t* version);

class Decoder {
 public:
  explicit Decoder(Limits limits = {}) : limits_(limits) {}

  // Server side: one request from the front of `data`.
  DecodeStatus DecodeRequest(std::string_view data, RequestView* request, size_t* consumed);
  // Client side: one reply or server-initiated frame from the front of `data`.
  DecodeStatus DecodeReply(std::string_view data, ReplyView* reply, size_t* consumed);

  const std::string& error() const { return error_; }
  size_t needed() const { return needed_; }
  uint32_t skip_id() const { return skip_id_; }
  Status skip_status() const { return skip_status_; }
  const std::string& skip_text() const { return error_; }
  size_t skip_bytes() const { return skip_bytes_; }

 private:
  DecodeStatus Fail(std::string_view message);
  DecodeStatus Skip(uint32_t id, Status status, std::string_view text, size_t bytes);

  Limits limits_;
  std::string error_;
  size_t needed_ = 0;
  uint32_t skip_id_ = 0;
  Status skip_status_ = Status::kError;
  size_t skip_bytes_ = 0;
};

// Little-endian cursor over a body. Every read checks the remaining size first; after a failed
// read ok() is false and later reads fail too, so callers may check once at the end.
class BodyReader {
 public:
  explicit BodyReader(std::string_view data) : data_(data) {}
  uint8_t U8();
  uint16_t U16();
  uint32_t U32();
  uint64_t U64();
  int64_t I64() { return static_cast<int64_t>(U64()); }
  std::string_view Bytes(size_t n);
  std::string_view Rest();
  bool ok() const { return ok_; }
  bool done() const { return ok_ && pos_ == data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Little-endian appenders.
void PutU8(std::string* out, uint8_t v);
void PutU16(std::string* out, uint16_t v);
void PutU32(std::string* out, uint32_t v);
void PutU64(std::string* out, uint64_t v);
inline void PutI64(std::string* out, int64_t v) { PutU64(out, static_cast<uint64_t>(v)); }
uint32_t LoadU32(const char* p);

void AppendPreface(std::string* out, uint8_t version = kVersion);

// Frames are built in place: Begin* writes the header with a zero length and returns its offset,
// the caller appends the body, End patches the length. No intermediate body string is needed.
size_t BeginRequest(std::string* out, uint32_t id, Op op, uint8_t flags, std::string_view key);
size_t BeginReply(std::string* out, uint32_t id, Status status, uint8_t flags = 0);
void EndFrame(std::string* out, size_t start);

void EncodeRequest(std::string* out, uint32_t id, Op op, uint8_t flags, std::string_view key,
                   std::string_view body);
void EncodeReply(std::string* out, uint32_t id, Status status, uint8_t flags,
                 std::string_view body);

// ---- Typed requests (client side) ----
void EncodeHello(std::string* out, uint32_t id, std::string_view client_name,
                 std::string_view proof, uint8_t flags = 0);
void EncodePing(std::string* out, uint32_t id, std::string_view message = {});
void EncodeGet(std::string* out, uint32_t id, std::string_view key);
void EncodeSet(std::string* out, uint32_t id, std::string_view key, std::string_view value,
               uint64_t ttl_ms = 0, uint8_t flags = 0);
void EncodeDel(std::string* out, uint32_t id, std::string_view key);
void EncodeExists(std::string* out, uint32_t id, std::string_view key);
void EncodeIncr(std::string* out, uint32_t id, std::string_view key, int64_t delta,
                uint64_t ttl_on_create_ms = 0);
void EncodeExpire(std::string* out, uint32_t id, std::string_view key, uint64_t ttl_ms,
                  uint8_t flags = 0);
void EncodeLock(std::string* out, uint32_t id, std::string_view key, std::string_view owner,
                uint64_t ttl_ms);
void EncodeUnlock(std::string* out, uint32_t id, std::string_view key, std::string_view owner);
void EncodeExtend(std::string* out, uint32_t id, std::string_view key, std::string_view owner,
                  uint64_t ttl_ms);
void EncodeThrottle(std::string* out, uint32_t id, std::string_view key, uint64_t max_burst,
                    uint64_t count, uint64_t period_s, uint64_t quantity = 1);
void EncodeFixedWindow(std::string* out, uint32_t id, std::string_view key, uint64_t limit,
                       uint64_t window_ms, uint64_t cost = 1);
void EncodeDelPrefix(std::string* out, uint32_t id, std::string_view prefix);
void EncodePublish(std::string* out, uint32_t id, std::string_view channel,
                   std::string_view message);
void EncodeSubscribe(std::string* out, uint32_t id, std::string_view channel, bool pattern = false);
void EncodeUnsubscribe(std::string* out, uint32_t id, uint32_t subscription_id);
void EncodeTopology(std::string* out, uint32_t id);
void EncodeCommand(std::string* out, uint32_t id, const std::vector<std::string_view>& args);

// ---- Typed replies (server side) ----
void EncodeOk(std::string* out, uint32_t id, std::string_view body = {});
void EncodeNil(std::string* out, uint32_t id);
void EncodeInt(std::string* out, uint32_t id, int64_t value);
// ERROR, FENCED, OOM, WRONGTYPE, TOO_LARGE, AUTH: the body is the text (Redis-style, with code).
void EncodeErrorText(std::string* out, uint32_t id, Status status, std::string_view text);
void EncodeBusy(std::string* out, uint32_t id, uint32_t retry_after_ms);
void EncodeMoved(std::string* out, uint32_t id, uint16_t slot, uint64_t view_epoch,
                 std::string_view host, uint16_t port);
void EncodeServerPreface(std::string* out, std::string_view nonce, bool auth_required);
void EncodeHelloReply(std::string* out, uint32_t id, uint64_t client_id, uint32_t max_frame_len);
void EncodeEvent(std::string* out, uint32_t subscription_id, uint64_t seq, std::string_view channel,
                 std::string_view message);
void EncodeHeartbeat(std::string* out, uint32_t subscription_id, uint64_t seq);

// ---- Request bodies (server side) ----
struct HelloArgs {
  uint8_t version = 0;
  std::string_view client_name;
  std::string_view proof;  // empty or kProofSize bytes
};
struct SetArgs {
  uint64_t ttl_ms = 0;
  std::string_view value;
};
struct IncrArgs {
  int64_t delta = 0;
  uint64_t ttl_on_create_ms = 0;
};
struct LockArgs {
  uint64_t ttl_ms = 0;  // 0 for UNLOCK
  std::string_view owner;
};
struct ThrottleArgs {
  uint64_t max_burst = 0, count = 0, period_s = 0, quantity = 0;
};
struct FixedWindowArgs {
  uint64_t limit = 0, window_ms = 0, cost = 0;
};
struct ServerPreface {
  uint8_t version = 0;
  bool auth_required = false;
  std::string_view nonce;
};
struct HelloReply {
  uint8_t version = 0;
  uint64_t client_id = 0;
  uint32_t max_frame_len = 0;
};
struct Moved {
  uint16_t slot = 0;
  uint64_t view_epoch = 0;
  uint16_t port = 0;
  std::string_view host;
};
struct Event {
  uint64_t seq = 0;
  bool heartbeat = false;
  std::string_view channel;
  std::string_view message;
};
struct Endpoint {
  std::string_view host;
  uint16_t port = 0;
  std::vector<std::pair<uint16_t, uint16_t>> slot_ranges;  // inclusive
};
// TOPOLOGY reply flags.
inline constexpr uint8_t kTopologyCluster = 0x01;  // answered from the member's cluster view
inline constexpr uint8_t kTopologyFenced = 0x02;   // the answering member is fenced
// A member's state in TOPOLOGY (the codes of cluster::MemberState).
enum class MemberState : uint8_t { kJoining = 0, kUp = 1, kLeaving = 2, kLeft = 3, kDown = 4 };
inline constexpr uint8_t kMaxMemberState = 4;
struct TopologyMember {
  std::string_view id;  // empty on a single node
  std::string_view host;
  uint16_t client_port = 0;
  MemberState state = MemberState::kUp;
  // This member's endpoints are Topology::endpoints[first_endpoint, first_endpoint + count).
  uint16_t first_endpoint = 0;
  uint16_t endpoint_count = 0;
};
struct Topology {
  uint64_t view_epoch = 0;
  std::vector<Endpoint> endpoints;
  uint8_t flags = 0;
  uint16_t self = 0;  // index of the answering member in `members`
  std::vector<TopologyMember> members;
};

// Each returns false when the body does not have exactly the op's layout.
bool ParseHello(std::string_view body, HelloArgs* args);
bool ParseSet(std::string_view body, SetArgs* args);
bool ParseIncr(std::string_view body, IncrArgs* args);
bool ParseTtl(std::string_view body, uint64_t* ttl_ms);  // EXPIRE
bool ParseLock(std::string_view body, LockArgs* args);   // LOCK and EXTEND
bool ParseThrottle(std::string_view body, ThrottleArgs* args);
bool ParseFixedWindow(std::string_view body, FixedWindowArgs* args);
bool ParseUnsubscribe(std::string_view body, uint32_t* subscription_id);
// Views into `body`; fails on a count above `max_args` or any length past the end.
bool ParseCommand(std::string_view body, size_t max_args, std::vector<std::string_view>* args);

// Reply bodies (client side).
bool ParseInt(std::string_view body, int64_t* value);
bool ParseBusy(std::string_view body, uint32_t* retry_after_ms);
bool ParseMoved(std::string_view body, Moved* moved);
bool ParseServerPreface(std::string_view body, ServerPreface* preface);
bool ParseHelloReply(std::string_view body, HelloReply* reply);
bool ParseEvent(const ReplyView& reply, Event* event);
bool ParseTopology(std::string_view body, Topology* topology);
void EncodeTopologyReply(std::string* out, uint32_t id, const Topology& topology);

// ---- Typed ops as RESP commands (server side) ----
// Holds the formatted numbers a command vector points at; reused across requests.
struct CommandScratch {
  char numbers[4][24];
  std::vector<std::string_view> args;
};

// Validates a typed request and maps it onto the RESP command that implements it (SET -> SET key
// value PX ttl NX ...), so one set of command handlers serves both protocols. On success the views
// in scratch->args point into the request and the scratch. On failure *status/*error say what to
// answer. HELLO, SUBSCRIBE, UNSUBSCRIBE, TOPOLOGY and COMMAND are not mapped (they return false
// with kError "ERR ... is handled by the connection"); the connection handles them itself.
// INCR's ttl-on-create is not expressed in the vector: the caller applies it when the reply equals
// the delta (the key was created by this INCR), in the same turn.
bool TypedToCommand(const RequestView& request, CommandScratch* scratch, Status* status,
                    std::string* error);

// Translates the RESP reply `resp` (one complete RESP2/RESP3 reply) produced for a typed op into
// the typed reply frame. Error replies map by their code: WRONGTYPE, OOM, BUSY.. -> statuses; the
// rest -> ERROR with the full text. Returns false if `resp` is not a reply the op can produce (the
// caller answers ERROR).
bool EncodeTypedReplyFromResp(std::string* out, uint32_t id, Op op, uint8_t flags,
                              std::string_view resp);

// Translates a RESP error reply (`-CODE text\r\n`) into its status frame as above: `-MOVED slot
// host:port` -> MOVED carrying `view_epoch` (0 when the caller does not know the view that
// answered), `-TRYAGAIN` -> BUSY (1 ms), codes -> statuses, else ERROR. False if `resp` is not
// an error reply.
bool EncodeStatusFromRespError(std::string* out, uint32_t id, std::string_view resp,
                               uint64_t view_epoch);

}  // namespace keep::proto::binary
