#include "dataplane/proto/binary_codec.h"

#include <charconv>
#include <cstring>

namespace keep::proto::binary {
namespace {

constexpr std::string_view kOpNames[] = {
    "UNKNOWN",   "HELLO",   "PING",      "GET",         "SET",      "DEL",      "EXISTS",
    "INCR",      "EXPIRE",  "LOCK",      "UNLOCK",      "EXTEND",   "THROTTLE", "FIXED_WINDOW",
    "DELPREFIX", "PUBLISH", "SUBSCRIBE", "UNSUBSCRIBE", "TOPOLOGY", "COMMAND"};
constexpr std::string_view kStatusNames[] = {"OK",        "NIL",       "ERROR",  "BUSY",
                                             "MOVED",     "FENCED",    "LOCKED", "OOM",
                                             "WRONGTYPE", "TOO_LARGE", "AUTH"};

uint16_t LoadU16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) | (static_cast<uint8_t>(p[1]) << 8));
}

uint64_t LoadU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// Ops whose key field must be empty (they address the connection, not a key).
bool TakesNoKey(Op op) {
  return op == Op::kHello || op == Op::kTopology || op == Op::kUnsubscribe || op == Op::kCommand;
}

std::string Hex2(uint8_t v) {
  constexpr char kDigits[] = "0123456789abcdef";
  return {'0', 'x', kDigits[v >> 4], kDigits[v & 15]};
}

}  // namespace

std::string_view OpName(Op op) {
  uint8_t code = static_cast<uint8_t>(op);
  return IsKnownOp(code) ? kOpNames[code] : kOpNames[0];
}

std::string_view StatusName(Status s) {
  uint8_t code = static_cast<uint8_t>(s);
  return code <= kMaxStatus ? kStatusNames[code] : "UNKNOWN";
}

bool IsKnownOp(uint8_t code) { return code >= 1 && code <= kMaxOp; }

uint8_t AllowedFlags(Op op) {
  switch (op) {
    case Op::kSet:
      return kSetNx | kSetXx | kSetGet | kSetKeepTtl;
    case Op::kExpire:
      return kExpireNx | kExpireXx | kExpireGt | kExpireLt;
    case Op::kHello:
      return kHelloResp3;
    case Op::kSubscribe:
      return kSubscribePattern;
    default:
      return 0;
  }
}

uint32_t LoadU32(const char* p) {
  return static_cast<uint32_t>(static_cast<uint8_t>(p[0])) |
         (static_cast<uint32_t>(static_cast<uint8_t>(p[1])) << 8) |
         (static_cast<uint32_t>(static_cast<uint8_t>(p[2])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(p[3])) << 24);
}

// ---- Decoding ----

DecodeStatus DecodePreface(std::string_view data, uint8_t* version) {
  // Judge the bytes already here, so a non-Keep peer is refused without waiting for all four.
  constexpr char kMagic[] = {'\0', 'K', 'P'};
  for (size_t i = 0; i < 3 && i < data.size(); ++i) {
    if (data[i] != kMagic[i]) return DecodeStatus::kError;
  }
  if (data.size() < kPrefaceSize) return DecodeStatus::kIncomplete;
  *version = static_cast<uint8_t>(data[3]);
  return DecodeStatus::kComplete;
}

DecodeStatus Decoder::Fail(std::string_view message) {
  error_.assign(message);
  needed_ = 0;
  return DecodeStatus::kError;
}

DecodeStatus Decoder::Skip(uint32_t id, Status status, std::string_view text, size_t bytes) {
  skip_id_ = id;
  skip_status_ = status;
  error_.assign(text);
  skip_bytes_ = bytes;
  needed_ = 0;
  return DecodeStatus::kSkip;
}

DecodeStatus Decoder::DecodeRequest(std::string_view data, RequestView* request, size_t* consumed) {
  *consumed = 0;
  needed_ = kFrameHeaderSize;
  if (data.size() < 4) return DecodeStatus::kIncomplete;
  const size_t length = LoadU32(data.data());
  if (length < kHeaderAfterLength) {
    return Fail("ERR Protocol error: frame length " + std::to_string(length) + " below 8");
  }
  if (length > limits_.max_skip_len) {
    return Fail("ERR Protocol error: frame of " + std::to_string(length) +
                " bytes exceeds the limit of " + std::to_string(limits_.max_frame_len()));
  }
  if (data.size() < kFrameHeaderSize) return DecodeStatus::kIncomplete;
  const uint32_t id = LoadU32(data.data() + 4);
  const uint8_t op_code = static_cast<uint8_t>(data[8]);
  const uint8_t flags = static_cast<uint8_t>(data[9]);
  const size_t key_len = LoadU16(data.data() + 10);
  const size_t total = 4 + length;
  if (id == kConnectionId) return Fail("ERR Protocol error: request id 0 is reserved");
  // Every verdict below is reached from the header alone, so a bad frame is skipped as it
  // arrives rather than buffered.
  if (length > limits_.max_frame_len()) {
    return Skip(id, Status::kTooLarge,
                "TOO_LARGE request of " + std::to_string(length) + " bytes exceeds the limit of " +
                    std::to_string(limits_.max_frame_len()),
                total);
  }
  if (key_len > length - kHeaderAfterLength) {
    return Skip(id, Status::kError, "ERR Protocol error: key length exceeds the frame", total);
  }
  if (!IsKnownOp(op_code))
    return Skip(id, Status::kError, "ERR unknown op " + Hex2(op_code), total);
  const Op op = static_cast<Op>(op_code);
  if ((flags & ~AllowedFlags(op)) != 0) {
    return Skip(id, Status::kError,
                "ERR unsupported flags " + Hex2(flags) + " for " + std::string(OpName(op)), total);
  }
  if (key_len != 0 && TakesNoKey(op)) {
    return Skip(id, Status::kError, "ERR " + std::string(OpName(op)) + " takes no key", total);
  }
  if (data.size() < total) {
    needed_ = total;
    return DecodeStatus::kIncomplete;
  }
  request->id = id;
  request->op = op;
  request->flags = flags;
  request->key = data.substr(kFrameHeaderSize, key_len);
  request->body = data.substr(kFrameHeaderSize + key_len, total - kFrameHeaderSize - key_len);
  *consumed = total;
  needed_ = 0;
  return DecodeStatus::kComplete;
}

DecodeStatus Decoder::DecodeReply(std::string_view data, ReplyView* reply, size_t* consumed) {
  *consumed = 0;
  needed_ = kFrameHeaderSize;
  if (data.size() < 4) return DecodeStatus::kIncomplete;
  const size_t length = LoadU32(data.data());
  if (length < kHeaderAfterLength) {
    return Fail("ERR Protocol error: frame length " + std::to_string(length) + " below 8");
  }
  // A COMMAND reply (KEYS, MGET) may legitimately exceed the request limit; the client's own cap
  // is max_skip_len.
  if (length > limits_.max_skip_len) {
    return Fail("ERR Protocol error: reply of " + std::to_string(length) + " bytes too large");
  }
  if (data.size() < kFrameHeaderSize) return DecodeStatus::kIncomplete;
  const uint8_t status = static_cast<uint8_t>(data[8]);
  if (status > kMaxStatus) return Fail("ERR Protocol error: unknown status " + Hex2(status));
  const size_t total = 4 + length;
  if (data.size() < total) {
    needed_ = total;
    return DecodeStatus::kIncomplete;
  }
  reply->id = LoadU32(data.data() + 4);
  reply->status = static_cast<Status>(status);
  reply->flags = static_cast<uint8_t>(data[9]);
  reply->body = data.substr(kFrameHeaderSize, length - kHeaderAfterLength);
  *consumed = total;
  needed_ = 0;
  return DecodeStatus::kComplete;
}

// ---- BodyReader ----

uint8_t BodyReader::U8() {
  std::string_view b = Bytes(1);
  return ok_ ? static_cast<uint8_t>(b[0]) : 0;
}
uint16_t BodyReader::U16() {
  std::string_view b = Bytes(2);
  return ok_ ? LoadU16(b.data()) : 0;
}
uint32_t BodyReader::U32() {
  std::string_view b = Bytes(4);
  return ok_ ? LoadU32(b.data()) : 0;
}
uint64_t BodyReader::U64() {
  std::string_view b = Bytes(8);
  return ok_ ? LoadU64(b.data()) : 0;
}
std::string_view BodyReader::Bytes(size_t n) {
  if (!ok_ || n > data_.size() - pos_) {
    ok_ = false;
    return {};
  }
  std::string_view b = data_.substr(pos_, n);
  pos_ += n;
  return b;
}
std::string_view BodyReader::Rest() {
  return ok_ ? Bytes(data_.size() - pos_) : std::string_view();
}

// ---- Encoding ----

void PutU8(std::string* out, uint8_t v) { out->push_back(static_cast<char>(v)); }
void PutU16(std::string* out, uint16_t v) {
  char b[2] = {static_cast<char>(v), static_cast<char>(v >> 8)};
  out->append(b, 2);
}
void PutU32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 4);
}
void PutU64(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 8);
}

void AppendPreface(std::string* out, uint8_t version) {
  out->append({'\0', 'K', 'P', static_cast<char>(version)});
}

size_t BeginRequest(std::string* out, uint32_t id, Op op, uint8_t flags, std::string_view key) {
  size_t start = out->size();
  PutU32(out, 0);
  PutU32(out, id);
  PutU8(out, static_cast<uint8_t>(op));
  PutU8(out, flags);
  PutU16(out, static_cast<uint16_t>(key.size()));
  out->append(key);
  return start;
}

size_t BeginReply(std::string* out, uint32_t id, Status status, uint8_t flags) {
  size_t start = out->size();
  PutU32(out, 0);
  PutU32(out, id);
  PutU8(out, static_cast<uint8_t>(status));
  PutU8(out, flags);
  PutU16(out, 0);
  return start;
}

void EndFrame(std::string* out, size_t start) {
  uint32_t length = static_cast<uint32_t>(out->size() - start - 4);
  for (int i = 0; i < 4; ++i) (*out)[start + i] = static_cast<char>(length >> (8 * i));
}

void EncodeRequest(std::string* out, uint32_t id, Op op, uint8_t flags, std::string_view key,
                   std::string_view body) {
  size_t start = BeginRequest(out, id, op, flags, key);
  out->append(body);
  EndFrame(out, start);
}

void EncodeReply(std::string* out, uint32_t id, Status status, uint8_t flags,
                 std::string_view body) {
  size_t start = BeginReply(out, id, status, flags);
  out->append(body);
  EndFrame(out, start);
}

void EncodeHello(std::string* out, uint32_t id, std::string_view client_name,
                 std::string_view proof, uint8_t flags) {
  size_t start = BeginRequest(out, id, Op::kHello, flags, {});
  PutU8(out, kVersion);
  client_name = client_name.substr(0, 255);
  PutU8(out, static_cast<uint8_t>(client_name.size()));
  out->append(client_name);
  proof = proof.substr(0, 255);
  PutU8(out, static_cast<uint8_t>(proof.size()));
  out->append(proof);
  EndFrame(out, start);
}

void EncodePing(std::string* out, uint32_t id, std::string_view message) {
  EncodeRequest(out, id, Op::kPing, 0, message, {});
}
void EncodeGet(std::string* out, uint32_t id, std::string_view key) {
  EncodeRequest(out, id, Op::kGet, 0, key, {});
}
void EncodeSet(std::string* out, uint32_t id, std::string_view key, std::string_view value,
               uint64_t ttl_ms, uint8_t flags) {
  size_t start = BeginRequest(out, id, Op::kSet, flags, key);
  PutU64(out, ttl_ms);
  out->append(value);
  EndFrame(out, start);
}
void EncodeDel(std::string* out, uint32_t id, std::string_view key) {
  EncodeRequest(out, id, Op::kDel, 0, key, {});
}
void EncodeExists(std::string* out, uint32_t id, std::string_view key) {
  EncodeRequest(out, id, Op::kExists, 0, key, {});
}
void EncodeIncr(std::string* out, uint32_t id, std::string_view key, int64_t delta,
                uint64_t ttl_on_create_ms) {
  size_t start = BeginRequest(out, id, Op::kIncr, 0, key);
  PutI64(out, delta);
  PutU64(out, ttl_on_create_ms);
  EndFrame(out, start);
}
void EncodeExpire(std::string* out, uint32_t id, std::string_view key, uint64_t ttl_ms,
                  uint8_t flags) {
  size_t start = BeginRequest(out, id, Op::kExpire, flags, key);
  PutU64(out, ttl_ms);
  EndFrame(out, start);
}
void EncodeLock(std::string* out, uint32_t id, std::string_view key, std::string_view owner,
                uint64_t ttl_ms) {
  size_t start = BeginRequest(out, id, Op::kLock, 0, key);
  PutU64(out, ttl_ms);
  out->append(owner);
  EndFrame(out, start);
}
void EncodeUnlock(std::string* out, uint32_t id, std::string_view key, std::string_view owner) {
  EncodeRequest(out, id, Op::kUnlock, 0, key, owner);
}
void EncodeExtend(std::string* out, uint32_t id, std::string_view key, std::string_view owner,
                  uint64_t ttl_ms) {
  size_t start = BeginRequest(out, id, Op::kExtend, 0, key);
  PutU64(out, ttl_ms);
  out->append(owner);
  EndFrame(out, start);
}
void EncodeThrottle(std::string* out, uint32_t id, std::string_view key, uint64_t max_burst,
                    uint64_t count, uint64_t period_s, uint64_t quantity) {
  size_t start = BeginRequest(out, id, Op::kThrottle, 0, key);
  PutU64(out, max_burst);
  PutU64(out, count);
  PutU64(out, period_s);
  PutU64(out, quantity);
  EndFrame(out, start);
}
void EncodeFixedWindow(std::string* out, uint32_t id, std::string_view key, uint64_t limit,
                       uint64_t window_ms, uint64_t cost) {
  size_t start = BeginRequest(out, id, Op::kFixedWindow, 0, key);
  PutU64(out, limit);
  PutU64(out, window_ms);
  PutU64(out, cost);
  EndFrame(out, start);
}
void EncodeDelPrefix(std::string* out, uint32_t id, std::string_view prefix) {
  EncodeRequest(out, id, Op::kDelPrefix, 0, prefix, {});
}
void EncodePublish(std::string* out, uint32_t id, std::string_view channel,
                   std::string_view message) {
  EncodeRequest(out, id, Op::kPublish, 0, channel, message);
}
void EncodeSubscribe(std::string* out, uint32_t id, std::string_view channel, bool pattern) {
  EncodeRequest(out, id, Op::kSubscribe, pattern ? kSubscribePattern : 0, channel, {});
}
void EncodeUnsubscribe(std::string* out, uint32_t id, uint32_t subscription_id) {
  size_t start = BeginRequest(out, id, Op::kUnsubscribe, 0, {});
  PutU32(out, subscription_id);
  EndFrame(out, start);
}
void EncodeTopology(std::string* out, uint32_t id) {
  EncodeRequest(out, id, Op::kTopology, 0, {}, {});
}
void EncodeCommand(std::string* out, uint32_t id, const std::vector<std::string_view>& args) {
  size_t start = BeginRequest(out, id, Op::kCommand, 0, {});
  PutU32(out, static_cast<uint32_t>(args.size()));
  for (std::string_view a : args) {
    PutU32(out, static_cast<uint32_t>(a.size()));
    out->append(a);
  }
  EndFrame(out, start);
}

void EncodeOk(std::string* out, uint32_t id, std::string_view body) {
  EncodeReply(out, id, Status::kOk, 0, body);
}
void EncodeNil(std::string* out, uint32_t id) { EncodeReply(out, id, Status::kNil, 0, {}); }
void EncodeInt(std::string* out, uint32_t id, int64_t value) {
  size_t start = BeginReply(out, id, Status::kOk);
  PutI64(out, value);
  EndFrame(out, start);
}
void EncodeErrorText(std::string* out, uint32_t id, Status status, std::string_view text) {
  EncodeReply(out, id, status, 0, text);
}
void EncodeBusy(std::string* out, uint32_t id, uint32_t retry_after_ms) {
  size_t start = BeginReply(out, id, Status::kBusy);
  PutU32(out, retry_after_ms);
  EndFrame(out, start);
}
void EncodeMoved(std::string* out, uint32_t id, uint16_t slot, uint64_t view_epoch,
                 std::string_view host, uint16_t port) {
  size_t start = BeginReply(out, id, Status::kMoved);
  PutU16(out, slot);
  PutU64(out, view_epoch);
  PutU16(out, port);
  host = host.substr(0, kMaxKeyLen);
  PutU16(out, static_cast<uint16_t>(host.size()));
  out->append(host);
  EndFrame(out, start);
}
void EncodeServerPreface(std::string* out, std::string_view nonce, bool auth_required) {
  size_t start = BeginReply(out, kConnectionId, Status::kOk, kReplyPreface);
  PutU8(out, kVersion);
  PutU8(out, auth_required ? 1 : 0);
  PutU16(out, 0);
  std::string padded(nonce.substr(0, kNonceSize));
  padded.resize(kNonceSize, '\0');
  out->append(padded);
  EndFrame(out, start);
}
void EncodeHelloReply(std::string* out, uint32_t id, uint64_t client_id, uint32_t max_frame_len) {
  size_t start = BeginReply(out, id, Status::kOk);
  PutU8(out, kVersion);
  PutU8(out, 0);
  PutU16(out, 0);
  PutU32(out, max_frame_len);
  PutU64(out, client_id);
  EndFrame(out, start);
}
void EncodeEvent(std::string* out, uint32_t subscription_id, uint64_t seq, std::string_view channel,
                 std::string_view message) {
  size_t start = BeginReply(out, subscription_id, Status::kOk, kReplyEvent);
  PutU64(out, seq);
  channel = channel.substr(0, kMaxKeyLen);
  PutU16(out, static_cast<uint16_t>(channel.size()));
  out->append(channel);
  out->append(message);
  EndFrame(out, start);
}
void EncodeHeartbeat(std::string* out, uint32_t subscription_id, uint64_t seq) {
  size_t start = BeginReply(out, subscription_id, Status::kOk, kReplyEvent | kReplyHeartbeat);
  PutU64(out, seq);
  EndFrame(out, start);
}

void EncodeTopologyReply(std::string* out, uint32_t id, const Topology& topology) {
  size_t start = BeginReply(out, id, Status::kOk);
  PutU64(out, topology.view_epoch);
  PutU16(out, static_cast<uint16_t>(topology.endpoints.size()));
  for (const Endpoint& e : topology.endpoints) {
    PutU16(out, e.port);
    PutU16(out, static_cast<uint16_t>(e.host.size()));
    out->append(e.host);
    PutU16(out, static_cast<uint16_t>(e.slot_ranges.size()));
    for (auto [first, last] : e.slot_ranges) {
      PutU16(out, first);
      PutU16(out, last);
    }
  }
  PutU8(out, topology.flags);
  PutU16(out, topology.self);
  PutU16(out, static_cast<uint16_t>(topology.members.size()));
  for (const TopologyMember& m : topology.members) {
    PutU16(out, static_cast<uint16_t>(m.id.size()));
    out->append(m.id);
    PutU16(out, static_cast<uint16_t>(m.host.size()));
    out->append(m.host);
    PutU16(out, m.client_port);
    PutU8(out, static_cast<uint8_t>(m.state));
    PutU16(out, m.first_endpoint);
    PutU16(out, m.endpoint_count);
  }
  EndFrame(out, start);
}

// ---- Body parsing ----

bool ParseHello(std::string_view body, HelloArgs* args) {
  BodyReader r(body);
  args->version = r.U8();
  args->client_name = r.Bytes(r.U8());
  args->proof = r.Bytes(r.U8());
  return r.done() && (args->proof.empty() || args->proof.size() == kProofSize);
}
bool ParseSet(std::string_view body, SetArgs* args) {
  BodyReader r(body);
  args->ttl_ms = r.U64();
  args->value = r.Rest();
  return r.ok();
}
bool ParseIncr(std::string_view body, IncrArgs* args) {
  BodyReader r(body);
  args->delta = r.I64();
  args->ttl_on_create_ms = r.U64();
  return r.done();
}
bool ParseTtl(std::string_view body, uint64_t* ttl_ms) {
  BodyReader r(body);
  *ttl_ms = r.U64();
  return r.done();
}
bool ParseLock(std::string_view body, LockArgs* args) {
  BodyReader r(body);
  args->ttl_ms = r.U64();
  args->owner = r.Rest();
  return r.ok();
}
bool ParseThrottle(std::string_view body, ThrottleArgs* args) {
  BodyReader r(body);
  args->max_burst = r.U64();
  args->count = r.U64();
  args->period_s = r.U64();
  args->quantity = r.U64();
  return r.done();
}
bool ParseFixedWindow(std::string_view body, FixedWindowArgs* args) {
  BodyReader r(body);
  args->limit = r.U64();
  args->window_ms = r.U64();
  args->cost = r.U64();
  return r.done();
}
bool ParseUnsubscribe(std::string_view body, uint32_t* subscription_id) {
  BodyReader r(body);
  *subscription_id = r.U32();
  return r.done();
}
bool ParseCommand(std::string_view body, size_t max_args, std::vector<std::string_view>* args) {
  args->clear();
  BodyReader r(body);
  uint32_t count = r.U32();
  if (!r.ok() || count == 0 || count > max_args) return false;
  // Each argument takes at least its 4-byte length, so a count the body cannot hold is refused
  // before anything is reserved.
  if (count > (body.size() - 4) / 4) return false;
  args->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t len = r.U32();
    std::string_view a = r.Bytes(len);
    if (!r.ok()) return false;
    args->push_back(a);
  }
  return r.done();
}

bool ParseInt(std::string_view body, int64_t* value) {
  BodyReader r(body);
  *value = r.I64();
  return r.done();
}
bool ParseBusy(std::string_view body, uint32_t* retry_after_ms) {
  BodyReader r(body);
  *retry_after_ms = r.U32();
  return r.ok();  // later versions may append fields
}
bool ParseMoved(std::string_view body, Moved* moved) {
  BodyReader r(body);
  moved->slot = r.U16();
  moved->view_epoch = r.U64();
  moved->port = r.U16();
  moved->host = r.Bytes(r.U16());
  return r.ok();
}
bool ParseServerPreface(std::string_view body, ServerPreface* preface) {
  BodyReader r(body);
  preface->version = r.U8();
  preface->auth_required = r.U8() != 0;
  r.U16();
  preface->nonce = r.Bytes(kNonceSize);
  return r.ok();
}
bool ParseHelloReply(std::string_view body, HelloReply* reply) {
  BodyReader r(body);
  reply->version = r.U8();
  r.U8();
  r.U16();
  reply->max_frame_len = r.U32();
  reply->client_id = r.U64();
  return r.ok();
}
bool ParseEvent(const ReplyView& reply, Event* event) {
  if ((reply.flags & kReplyEvent) == 0) return false;
  BodyReader r(reply.body);
  event->seq = r.U64();
  event->heartbeat = (reply.flags & kReplyHeartbeat) != 0;
  event->channel = {};
  event->message = {};
  if (event->heartbeat) return r.ok();
  event->channel = r.Bytes(r.U16());
  event->message = r.Rest();
  return r.ok();
}
bool ParseTopology(std::string_view body, Topology* topology) {
  BodyReader r(body);
  topology->view_epoch = r.U64();
  uint16_t n = r.U16();
  topology->endpoints.clear();
  for (uint16_t i = 0; i < n && r.ok(); ++i) {
    Endpoint e;
    e.port = r.U16();
    e.host = r.Bytes(r.U16());
    uint16_t ranges = r.U16();
    for (uint16_t j = 0; j < ranges && r.ok(); ++j) {
      uint16_t first = r.U16();
      uint16_t last = r.U16();
      if (r.ok() && (first > last || last >= kSlotCount)) return false;
      e.slot_ranges.emplace_back(first, last);
    }
    topology->endpoints.push_back(std::move(e));
  }
  topology->flags = r.U8();
  topology->self = r.U16();
  uint16_t m = r.U16();
  topology->members.clear();
  for (uint16_t i = 0; i < m && r.ok(); ++i) {
    TopologyMember member;
    member.id = r.Bytes(r.U16());
    member.host = r.Bytes(r.U16());
    member.client_port = r.U16();
    uint8_t state = r.U8();
    member.first_endpoint = r.U16();
    member.endpoint_count = r.U16();
    if (state > kMaxMemberState ||
        static_cast<size_t>(member.first_endpoint) + member.endpoint_count > n) {
      return false;
    }
    member.state = static_cast<MemberState>(state);
    topology->members.push_back(member);
  }
  if (m > 0 && topology->self >= m) return false;
  return r.ok();
}

// ---- Typed ops as RESP commands ----

namespace {

std::string_view FormatNumber(char* buf, uint64_t v, bool is_signed) {
  char* end = is_signed ? std::to_chars(buf, buf + 24, static_cast<int64_t>(v)).ptr
                        : std::to_chars(buf, buf + 24, v).ptr;
  return {buf, static_cast<size_t>(end - buf)};
}

// INCR with ttl_on_create: INCRBY, and PEXPIRE when the key did not exist before. pcall so that
// INCRBY's own errors (WRONGTYPE, not an integer, overflow) come back with their plain texts.
constexpr std::string_view kIncrWithTtlScript =
    "local existed = redis.call('EXISTS', KEYS[1]) "
    "local r = redis.pcall('INCRBY', KEYS[1], ARGV[1]) "
    "if type(r) == 'table' then return r end "
    "if existed == 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end "
    "return r";

bool Malformed(const RequestView& request, Status* status, std::string* error) {
  *status = Status::kError;
  *error = "ERR malformed " + std::string(OpName(request.op)) + " body";
  return false;
}

}  // namespace

bool TypedToCommand(const RequestView& request, CommandScratch* scratch, Status* status,
                    std::string* error) {
  auto& args = scratch->args;
  args.clear();
  auto number = [&](int slot, uint64_t v, bool is_signed = false) {
    args.push_back(FormatNumber(scratch->numbers[slot], v, is_signed));
  };
  const std::string_view key = request.key;
  switch (request.op) {
    case Op::kPing:
      if (!request.body.empty()) return Malformed(request, status, error);
      args.push_back("PING");
      if (!key.empty()) args.push_back(key);
      return true;
    case Op::kGet:
    case Op::kDel:
    case Op::kExists:
    case Op::kDelPrefix:
      if (!request.body.empty()) return Malformed(request, status, error);
      args.push_back(request.op == Op::kGet      ? "GET"
                     : request.op == Op::kDel    ? "DEL"
                     : request.op == Op::kExists ? "EXISTS"
                                                 : "DELPREFIX");
      args.push_back(key);
      return true;
    case Op::kSet: {
      SetArgs set;
      if (!ParseSet(request.body, &set)) return Malformed(request, status, error);
      const uint8_t f = request.flags;
      if ((f & kSetNx) && (f & kSetXx)) {
        *status = Status::kError;
        *error = "ERR syntax error";
        return false;
      }
      if ((f & kSetKeepTtl) && set.ttl_ms != 0) {
        *status = Status::kError;
        *error = "ERR syntax error";
        return false;
      }
      args.insert(args.end(), {"SET", key, set.value});
      if (set.ttl_ms != 0) {
        args.push_back("PX");
        number(0, set.ttl_ms);
      }
      if (f & kSetNx) args.push_back("NX");
      if (f & kSetXx) args.push_back("XX");
      if (f & kSetGet) args.push_back("GET");
      if (f & kSetKeepTtl) args.push_back("KEEPTTL");
      return true;
    }
    case Op::kIncr: {
      IncrArgs incr;
      if (!ParseIncr(request.body, &incr)) return Malformed(request, status, error);
      if (incr.ttl_on_create_ms == 0) {
        args.insert(args.end(), {"INCRBY", key});
        number(0, static_cast<uint64_t>(incr.delta), true);
        return true;
      }
      // The TTL must be set in the same turn as the INCR that created the key, on the shard that
      // owns it; a script is one turn of that shard by construction (design §2.6).
      args.insert(args.end(), {"EVAL", kIncrWithTtlScript, "1", key});
      number(0, static_cast<uint64_t>(incr.delta), true);
      number(1, incr.ttl_on_create_ms);
      return true;
    }
    case Op::kExpire: {
      uint64_t ttl = 0;
      if (!ParseTtl(request.body, &ttl)) return Malformed(request, status, error);
      args.insert(args.end(), {"PEXPIRE", key});
      number(0, ttl);
      if (request.flags & kExpireNx) args.push_back("NX");
      if (request.flags & kExpireXx) args.push_back("XX");
      if (request.flags & kExpireGt) args.push_back("GT");
      if (request.flags & kExpireLt) args.push_back("LT");
      return true;
    }
    case Op::kLock:
    case Op::kExtend: {
      LockArgs lock;
      if (!ParseLock(request.body, &lock)) return Malformed(request, status, error);
      args.insert(args.end(), {request.op == Op::kLock ? "LOCK" : "LOCKEXTEND", key, lock.owner});
      number(0, lock.ttl_ms);
      return true;
    }
    case Op::kUnlock:
      args.insert(args.end(), {"UNLOCK", key, request.body});
      return true;
    case Op::kThrottle: {
      ThrottleArgs t;
      if (!ParseThrottle(request.body, &t)) return Malformed(request, status, error);
      args.insert(args.end(), {"CL.THROTTLE", key});
      number(0, t.max_burst);
      number(1, t.count);
      number(2, t.period_s);
      number(3, t.quantity);
      return true;
    }
    case Op::kFixedWindow: {
      FixedWindowArgs w;
      if (!ParseFixedWindow(request.body, &w)) return Malformed(request, status, error);
      args.insert(args.end(), {"RATE.FIXED", key});
      number(0, w.limit);
      number(1, w.window_ms);
      number(2, w.cost);
      return true;
    }
    case Op::kPublish:
      args.insert(args.end(), {"PUBLISH", key, request.body});
      return true;
    default:
      *status = Status::kError;
      *error = "ERR " + std::string(OpName(request.op)) + " is handled by the connection";
      return false;
  }
}

namespace {

// Reads one CRLF-terminated line after the type byte; false if absent.
bool RespLine(std::string_view resp, std::string_view* line, size_t* next) {
  size_t end = resp.find("\r\n", 1);
  if (end == std::string_view::npos) return false;
  *line = resp.substr(1, end - 1);
  *next = end + 2;
  return true;
}

bool RespInt(std::string_view text, int64_t* v) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *v);
  return ec == std::errc() && ptr == text.data() + text.size();
}

Status StatusForErrorCode(std::string_view text) {
  std::string_view code = text.substr(0, text.find(' '));
  if (code == "WRONGTYPE") return Status::kWrongType;
  if (code == "OOM") return Status::kOom;
  if (code == "NOAUTH" || code == "WRONGPASS") return Status::kAuth;
  if (code == "CLUSTERDOWN") return Status::kFenced;
  if (text.find("exceeds maximum allowed size") != std::string_view::npos) {
    return Status::kTooLarge;
  }
  return Status::kError;
}

// `-MOVED slot host:port`. RESP carries no view epoch; the caller passes the one it knows (0
// tells the client to fetch TOPOLOGY).
bool EncodeMovedFromResp(std::string* out, uint32_t id, std::string_view line,
                         uint64_t view_epoch) {
  std::string_view rest = line.substr(std::min(line.size(), sizeof("MOVED")));
  size_t space = rest.find(' ');
  if (space == std::string_view::npos) return false;
  int64_t slot = 0;
  int64_t port = 0;
  std::string_view endpoint = rest.substr(space + 1);
  size_t colon = endpoint.rfind(':');
  if (colon == std::string_view::npos || !RespInt(rest.substr(0, space), &slot) ||
      !RespInt(endpoint.substr(colon + 1), &port) || slot < 0 || slot > 0xffff || port < 0 ||
      port > 0xffff) {
    return false;
  }
  EncodeMoved(out, id, static_cast<uint16_t>(slot), view_epoch, endpoint.substr(0, colon),
              static_cast<uint16_t>(port));
  return true;
}

// A TRYAGAIN that says how long to wait (`... retry in N ms`, the lock quarantine) passes the
// wait on as BUSY's retry_after_ms, so a client does not spin through its retries meanwhile.
uint32_t TryAgainRetryMs(std::string_view line) {
  constexpr std::string_view kPrefix = "retry in ";
  constexpr std::string_view kSuffix = " ms";
  size_t at = line.rfind(kPrefix);
  if (at == std::string_view::npos || !line.ends_with(kSuffix)) return 1;
  std::string_view digits = line.substr(at + kPrefix.size());
  digits.remove_suffix(kSuffix.size());
  int64_t ms = 0;
  if (!RespInt(digits, &ms) || ms < 1) return 1;
  return static_cast<uint32_t>(std::min<int64_t>(ms, UINT32_MAX));
}

void EncodeErrorLine(std::string* out, uint32_t id, std::string_view line, uint64_t view_epoch) {
  if (line.starts_with("MOVED ") && EncodeMovedFromResp(out, id, line, view_epoch)) return;
  if (line.starts_with("TRYAGAIN")) return EncodeBusy(out, id, TryAgainRetryMs(line));
  EncodeErrorText(out, id, StatusForErrorCode(line), line);
}

}  // namespace

bool EncodeStatusFromRespError(std::string* out, uint32_t id, std::string_view resp,
                               uint64_t view_epoch) {
  std::string_view line;
  size_t next = 0;
  if (resp.empty() || resp[0] != '-' || !RespLine(resp, &line, &next)) return false;
  EncodeErrorLine(out, id, line, view_epoch);
  return true;
}

bool EncodeTypedReplyFromResp(std::string* out, uint32_t id, Op op, uint8_t flags,
                              std::string_view resp) {
  (void)flags;
  if (resp.empty()) return false;
  std::string_view line;
  size_t next = 0;
  if (!RespLine(resp, &line, &next)) return false;
  const bool null_means_locked = op == Op::kLock;
  auto nil = [&] {
    if (null_means_locked) {
      EncodeReply(out, id, Status::kLocked, 0, {});
    } else {
      EncodeNil(out, id);
    }
    return true;
  };
  switch (resp[0]) {
    case '+':
      EncodeOk(out, id, op == Op::kSet ? std::string_view() : line);
      return true;
    case '-':
      EncodeErrorLine(out, id, line, 0);
      return true;
    case ':': {
      int64_t v = 0;
      if (!RespInt(line, &v)) return false;
      EncodeInt(out, id, v);
      return true;
    }
    case '_':
      return nil();
    case '$': {
      int64_t len = 0;
      if (!RespInt(line, &len)) return false;
      if (len < 0) return nil();
      if (static_cast<uint64_t>(len) > resp.size() - next) return false;
      EncodeOk(out, id, resp.substr(next, static_cast<size_t>(len)));
      return true;
    }
    case '*': {
      int64_t count = 0;
      if (!RespInt(line, &count)) return false;
      if (count < 0) return nil();
      // Rate-limit replies: an array of integers becomes that many i64s.
      size_t start = BeginReply(out, id, Status::kOk);
      std::string_view rest = resp.substr(next);
      for (int64_t i = 0; i < count; ++i) {
        int64_t v = 0;
        if (rest.empty() || rest[0] != ':' || !RespLine(rest, &line, &next) || !RespInt(line, &v)) {
          out->resize(start);
          return false;
        }
        PutI64(out, v);
        rest = rest.substr(next);
      }
      EndFrame(out, start);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace keep::proto::binary
