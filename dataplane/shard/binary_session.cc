#include "dataplane/shard/binary_session.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "dataplane/commands/plan.h"
#include "dataplane/commands/string_util.h"
#include "dataplane/core/slot.h"
#include "dataplane/shard/shard.h"
#include "dataplane/shard/shard_group.h"

namespace keep::shard {

namespace bin = proto::binary;

static_assert(static_cast<uint8_t>(cluster::MemberState::kJoining) ==
                      static_cast<uint8_t>(bin::MemberState::kJoining) &&
                  static_cast<uint8_t>(cluster::MemberState::kUp) ==
                      static_cast<uint8_t>(bin::MemberState::kUp) &&
                  static_cast<uint8_t>(cluster::MemberState::kLeaving) ==
                      static_cast<uint8_t>(bin::MemberState::kLeaving) &&
                  static_cast<uint8_t>(cluster::MemberState::kLeft) ==
                      static_cast<uint8_t>(bin::MemberState::kLeft) &&
                  static_cast<uint8_t>(cluster::MemberState::kDown) ==
                      static_cast<uint8_t>(bin::MemberState::kDown),
              "TOPOLOGY sends cluster::MemberState codes as they are");

namespace {

std::string_view HostOf(std::string_view addr) {
  size_t colon = addr.rfind(':');
  return colon == std::string_view::npos ? addr : addr.substr(0, colon);
}

}  // namespace

// ---- BinaryHub ----

BinarySubscription* BinaryHub::Add(Connection* conn, uint32_t id, bool pattern,
                                   std::string_view name, int64_t now_ms) {
  auto sub = std::make_unique<BinarySubscription>();
  sub->conn = conn;
  sub->id = id;
  sub->pattern = pattern;
  sub->name.assign(name);
  sub->last_sent_ms = now_ms;
  sub->index = all_.size();
  BinarySubscription* raw = sub.get();
  all_.push_back(std::move(sub));
  if (pattern) {
    patterns_.push_back(raw);
  } else {
    auto it = channels_.find(name);
    if (it == channels_.end())
      it = channels_.emplace(std::string(name), std::vector<BinarySubscription*>{}).first;
    it->second.push_back(raw);
  }
  return raw;
}

void BinaryHub::Remove(BinarySubscription* sub) {
  if (sub->pattern) {
    std::erase(patterns_, sub);
  } else if (auto it = channels_.find(sub->name); it != channels_.end()) {
    std::erase(it->second, sub);
    if (it->second.empty()) channels_.erase(it);
  }
  // Swap with the last so removal is O(1) in `all_`.
  size_t index = sub->index;
  if (index + 1 != all_.size()) {
    std::swap(all_[index], all_.back());
    all_[index]->index = index;
  }
  all_.pop_back();
}

// ---- Helpers ----

bool RefusedOverBinary(std::string_view name) {
  static constexpr std::string_view kRefused[] = {
      "subscribe",    "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe",
      "sunsubscribe", "monitor",     "hello",      "reset",        "auth"};
  for (std::string_view refused : kRefused) {
    if (commands::EqualsIgnoreCase(name, refused)) return true;
  }
  return false;
}

namespace {

// The single member that owns every endpoint, so clients read one layout in both modes.
void FinishSingleMember(const TopologyInput& input, bin::Topology* topology) {
  topology->flags = 0;
  topology->self = 0;
  topology->members.clear();
  bin::TopologyMember member;
  member.host = input.host;
  member.client_port = static_cast<uint16_t>(input.client_port);
  member.endpoint_count = static_cast<uint16_t>(topology->endpoints.size());
  topology->members.push_back(member);
}

}  // namespace

void BuildTopology(const TopologyInput& input, bin::Topology* topology) {
  topology->view_epoch = input.view_epoch;
  topology->endpoints.clear();
  if (input.shard_ports.empty()) {
    bin::Endpoint endpoint;
    endpoint.host = input.host;
    endpoint.port = static_cast<uint16_t>(input.client_port);
    endpoint.slot_ranges.emplace_back(0, core::kSlotCount - 1);
    topology->endpoints.push_back(std::move(endpoint));
    FinishSingleMember(input, topology);
    return;
  }
  for (int shard = 0; shard < input.shard_count; ++shard) {
    bin::Endpoint endpoint;
    endpoint.host = input.host;
    endpoint.port = static_cast<uint16_t>(input.shard_ports[shard]);
    // Slots are dealt to shards by ShardOfSlot; merge consecutive ones into ranges.
    for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
      if (commands::ShardOfSlot(slot, input.shard_count) != shard) continue;
      auto& ranges = endpoint.slot_ranges;
      if (!ranges.empty() && ranges.back().second + 1u == slot) {
        ranges.back().second = static_cast<uint16_t>(slot);
      } else {
        ranges.emplace_back(static_cast<uint16_t>(slot), static_cast<uint16_t>(slot));
      }
    }
    topology->endpoints.push_back(std::move(endpoint));
  }
  FinishSingleMember(input, topology);
}

void BuildClusterTopology(const cluster::View& view, bin::Topology* topology) {
  topology->view_epoch = view.epoch;
  topology->flags = bin::kTopologyCluster | (view.fenced ? bin::kTopologyFenced : 0);
  topology->self = static_cast<uint16_t>(std::max(0, view.self));
  topology->endpoints.clear();
  topology->members.clear();
  std::vector<size_t> first(view.members.size());
  for (size_t m = 0; m < view.members.size(); ++m) {
    const cluster::ViewMember& vm = view.members[m];
    first[m] = topology->endpoints.size();
    bin::TopologyMember member;
    member.id = vm.member.id;
    member.host = vm.member.host;
    member.client_port = static_cast<uint16_t>(vm.member.client_port);
    member.state = static_cast<bin::MemberState>(vm.state);
    member.first_endpoint = static_cast<uint16_t>(first[m]);
    member.endpoint_count = static_cast<uint16_t>(vm.endpoints.size());
    topology->members.push_back(member);
    // The "host:port" strings MOVED names, so a client finds the endpoint a redirect points at.
    for (const std::string& address : vm.endpoints) {
      bin::Endpoint endpoint;
      size_t colon = address.rfind(':');
      endpoint.host = std::string_view(address).substr(0, colon);
      int port = 0;
      std::from_chars(address.data() + colon + 1, address.data() + address.size(), port);
      endpoint.port = static_cast<uint16_t>(port);
      topology->endpoints.push_back(std::move(endpoint));
    }
  }
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    uint16_t owner = view.owner[slot];
    if (owner == cluster::kNoOwner) continue;
    auto& ranges =
        topology->endpoints[first[owner] + view.members[owner].EndpointIndex(slot)].slot_ranges;
    if (!ranges.empty() && ranges.back().second + 1u == slot) {
      ranges.back().second = static_cast<uint16_t>(slot);
    } else {
      ranges.emplace_back(static_cast<uint16_t>(slot), static_cast<uint16_t>(slot));
    }
  }
}

bool ValidProof(std::string_view secret, std::string_view nonce, std::string_view proof) {
  if (proof.size() != bin::kProofSize) return false;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(nonce.data()), nonce.size(), mac,
           &mac_len) == nullptr ||
      mac_len != bin::kProofSize) {
    return false;
  }
  return CRYPTO_memcmp(mac, proof.data(), bin::kProofSize) == 0;
}

// ---- The session, as part of the shard ----

void Shard::BinaryInput(Connection* conn, std::string_view data, bool from_scratch) {
  BinaryState& state = *conn->binary;
  size_t offset = 0;
  if (!state.preface_done && !BinaryPreface(conn, data, &offset)) {
    // Not enough bytes for the preface yet (kept below), or the connection is being closed.
    if (conn->closed) return;
  }
  while (state.preface_done && offset < data.size() && !conn->closed && !conn->close_after_flush &&
         !InputPaused(conn)) {
    if (state.skip_remaining > 0) {
      size_t n = std::min(state.skip_remaining, data.size() - offset);
      state.skip_remaining -= n;
      offset += n;
      continue;
    }
    bin::RequestView request;
    size_t consumed = 0;
    bin::DecodeStatus status =
        state.decoder.DecodeRequest(data.substr(offset), &request, &consumed);
    if (status == bin::DecodeStatus::kIncomplete) {
      conn->parse_needed = state.decoder.needed();
      break;
    }
    conn->parse_needed = 0;
    if (status == bin::DecodeStatus::kError) {
      bin::EncodeErrorText(&conn->out, bin::kConnectionId, bin::Status::kError,
                           state.decoder.error());
      conn->close_after_flush = true;
      MarkWrite(conn);
      offset = data.size();
      break;
    }
    if (status == bin::DecodeStatus::kSkip) {
      bin::EncodeErrorText(&conn->out, state.decoder.skip_id(), state.decoder.skip_status(),
                           state.decoder.skip_text());
      MarkWrite(conn);
      size_t skip = state.decoder.skip_bytes();
      size_t available = data.size() - offset;
      if (skip <= available) {
        offset += skip;
      } else {
        state.skip_remaining = skip - available;
        offset = data.size();
      }
      continue;
    }
    offset += consumed;
    ++stats_.total_commands_processed;
    BinaryRequest(conn, request);
  }
  if (conn->closed) return;
  if (conn->close_after_flush) offset = data.size();
  if (from_scratch) {
    if (offset < data.size()) conn->in.Append(data.substr(offset));
  } else {
    conn->in.Consume(offset);
    conn->in.ShrinkIfEmpty(256 * 1024);
  }
  if (conn->in.size() > static_cast<size_t>(options_.client_query_buffer_limit)) {
    Close(conn, "query buffer limit reached");
    return;
  }
  if (InputPaused(conn)) UpdateInterest(conn);
}

bool Shard::BinaryPreface(Connection* conn, std::string_view data, size_t* offset) {
  BinaryState& state = *conn->binary;
  // Bytes that can no longer become `00 'K' 'P'` close at once, without waiting for the rest.
  static constexpr char kMagic[3] = {0, 'K', 'P'};
  if (std::memcmp(data.data(), kMagic, std::min(data.size(), sizeof(kMagic))) != 0) {
    Close(conn, nullptr);
    return false;
  }
  if (data.size() < bin::kPrefaceSize) {
    conn->parse_needed = bin::kPrefaceSize;
    return false;
  }
  uint8_t version = 0;
  if (bin::DecodePreface(data.substr(0, bin::kPrefaceSize), &version) !=
      bin::DecodeStatus::kComplete) {
    Close(conn, nullptr);
    return false;
  }
  *offset = bin::kPrefaceSize;
  conn->parse_needed = 0;
  if (version != bin::kVersion) {
    bin::EncodeErrorText(&conn->out, bin::kConnectionId, bin::Status::kError,
                         "ERR unsupported protocol version " + std::to_string(version) +
                             " (server speaks " + std::to_string(bin::kVersion) + ")");
    conn->close_after_flush = true;
    MarkWrite(conn);
    return false;
  }
  if (RAND_bytes(reinterpret_cast<unsigned char*>(state.nonce.data()),
                 static_cast<int>(state.nonce.size())) != 1) {
    Close(conn, "no random bytes for the HELLO nonce");
    return false;
  }
  state.preface_done = true;
  bin::EncodeServerPreface(&conn->out, std::string_view(state.nonce.data(), state.nonce.size()),
                           !options_.command_limits.requirepass.empty());
  MarkWrite(conn);
  return true;
}

void Shard::BinaryRequest(Connection* conn, const bin::RequestView& request) {
  BinaryState& state = *conn->binary;
  conn->client.last_interaction_ms = now_ms_;
  if (request.op == bin::Op::kHello) return BinaryHello(conn, request);
  if (!conn->client.authenticated) {
    if (request.op == bin::Op::kPing) {
      bin::EncodeOk(&conn->out, request.id, request.key.empty() ? "PONG" : request.key);
    } else {
      bin::EncodeErrorText(&conn->out, request.id, bin::Status::kAuth,
                           "NOAUTH Authentication required.");
    }
    MarkWrite(conn);
    return;
  }
  switch (request.op) {
    case bin::Op::kSubscribe:
      return BinarySubscribe(conn, request);
    case bin::Op::kUnsubscribe:
      return BinaryUnsubscribe(conn, request);
    case bin::Op::kTopology:
      return BinaryTopology(conn, request);
    case bin::Op::kCommand:
      if (!bin::ParseCommand(request.body, 1024 * 1024, &state.command_args) ||
          state.command_args.empty()) {
        bin::EncodeErrorText(&conn->out, request.id, bin::Status::kError,
                             "ERR malformed COMMAND body");
        MarkWrite(conn);
        return;
      }
      if (RefusedOverBinary(state.command_args[0])) {
        bin::EncodeErrorText(&conn->out, request.id, bin::Status::kError,
                             "ERR '" + std::string(state.command_args[0]) +
                                 "' changes the connection mode: use the binary protocol's own "
                                 "ops (HELLO, SUBSCRIBE, UNSUBSCRIBE)");
        MarkWrite(conn);
        return;
      }
      return BinaryDispatch(conn, request, state.command_args,
                            state.command_args.size() > 1 ? state.command_args[1] : "");
    default: {
      bin::Status status = bin::Status::kError;
      if (!bin::TypedToCommand(request, &state.scratch, &status, &state.error)) {
        bin::EncodeErrorText(&conn->out, request.id, status, state.error);
        MarkWrite(conn);
        return;
      }
      return BinaryDispatch(conn, request, state.scratch.args, request.key);
    }
  }
}

void Shard::BinaryHello(Connection* conn, const bin::RequestView& request) {
  BinaryState& state = *conn->binary;
  bin::HelloArgs hello;
  if (!bin::ParseHello(request.body, &hello)) {
    bin::EncodeErrorText(&conn->out, request.id, bin::Status::kError, "ERR malformed HELLO body");
  } else if (hello.version != bin::kVersion) {
    bin::EncodeErrorText(&conn->out, request.id, bin::Status::kError,
                         "ERR HELLO version " + std::to_string(hello.version) +
                             " differs from the preface's " + std::to_string(bin::kVersion));
  } else if (!options_.command_limits.requirepass.empty() &&
             !ValidProof(options_.command_limits.requirepass,
                         std::string_view(state.nonce.data(), state.nonce.size()), hello.proof)) {
    // The connection stays open and may retry (binary_protocol.md §1).
    bin::EncodeErrorText(&conn->out, request.id, bin::Status::kAuth, "AUTH invalid proof");
  } else {
    conn->client.authenticated = true;
    conn->client.name.assign(hello.client_name);
    conn->client.resp_version = (request.flags & bin::kHelloResp3) ? 3 : 2;
    bin::EncodeHelloReply(&conn->out, request.id, conn->client.id,
                          static_cast<uint32_t>(options_.binary_limits.max_frame_len()));
  }
  MarkWrite(conn);
}

void Shard::BinaryDispatch(Connection* conn, const bin::RequestView& request,
                           std::span<const std::string_view> args, std::string_view key) {
  BinaryState& state = *conn->binary;
  // RESP refuses an argument over proto-max-bulk-len while parsing; binary frames carry their
  // arguments unparsed, so the same limit is applied here.
  const auto max_arg = static_cast<size_t>(options_.command_limits.proto_max_bulk_len);
  for (std::string_view arg : args) {
    if (arg.size() > max_arg) {
      bin::EncodeErrorText(&conn->out, request.id, bin::Status::kTooLarge,
                           "TOO_LARGE argument of " + std::to_string(arg.size()) +
                               " bytes exceeds proto-max-bulk-len " + std::to_string(max_arg));
      MarkWrite(conn);
      return;
    }
  }
  // BUSY instead of an unbounded queue: only requests that would leave this shard can be refused,
  // so local requests always run.
  if (!key.empty() && options_.count > 1) {
    int owner = commands::ShardOfSlot(group_->slot_function()(key), options_.count);
    if (owner != options_.index && (state.inflight >= kBinaryMaxInflight ||
                                    unsent_forwards_[owner] >= kBinaryMaxQueuedPerRing)) {
      bin::EncodeBusy(&conn->out, request.id, kBusyRetryMs);
      metrics_.RecordRedirect(telemetry::Redirect::kBusy);
      MarkWrite(conn);
      return;
    }
  }
  state.resp.clear();
  state.current_id = request.id;
  state.current_op = static_cast<uint8_t>(request.op);
  state.current_flags = request.flags;
  state.deferred = false;
  state.route_refused = false;
  Dispatch(conn, args);
  if (conn->closed || state.deferred) return;
  if (state.route_refused) {
    // The cluster refused before anything ran; the view that decided is this turn's.
    bin::EncodeStatusFromRespError(&conn->out, request.id, state.resp, view_->epoch);
    MarkWrite(conn);
    return;
  }
  BinaryReply(conn, request.id, state.current_op, request.flags, state.resp);
}

void Shard::BinaryReply(Connection* conn, uint32_t id, uint8_t op, uint8_t flags,
                        std::string_view resp) {
  auto typed = static_cast<bin::Op>(op);
  if (typed == bin::Op::kCommand) {
    bin::EncodeOk(&conn->out, id, resp);
  } else if (!bin::EncodeTypedReplyFromResp(&conn->out, id, typed, flags, resp)) {
    bin::EncodeErrorText(&conn->out, id, bin::Status::kError,
                         "ERR unexpected reply for " + std::string(bin::OpName(typed)));
  }
  MarkWrite(conn);
}

void Shard::BinaryDefer(Connection* conn, PendingReply* slot) {
  BinaryState& state = *conn->binary;
  slot->binary_id = state.current_id;
  slot->binary_op = state.current_op;
  slot->binary_flags = state.current_flags;
  state.deferred = true;
  ++state.inflight;
}

void Shard::BinaryComplete(Connection* conn, PendingReply* slot) {
  --conn->binary->inflight;
  BinaryReply(conn, slot->binary_id, slot->binary_op, slot->binary_flags, slot->bytes);
  Recycle(slot);
}

void Shard::BinarySubscribe(Connection* conn, const bin::RequestView& request) {
  BinaryState& state = *conn->binary;
  if (!request.body.empty()) {
    bin::EncodeErrorText(&conn->out, request.id, bin::Status::kError,
                         "ERR malformed SUBSCRIBE body");
  } else if (state.subscriptions.contains(request.id)) {
    bin::EncodeErrorText(&conn->out, request.id, bin::Status::kError,
                         "ERR subscription id " + std::to_string(request.id) + " is in use");
  } else {
    bool pattern = (request.flags & bin::kSubscribePattern) != 0;
    BinarySubscription* sub = binary_hub_.Add(conn, request.id, pattern, request.key, now_ms_);
    state.subscriptions.emplace(request.id, sub);
    std::string& out = conn->out;
    size_t start = bin::BeginReply(&out, request.id, bin::Status::kOk);
    bin::PutU64(&out, sub->seq);
    bin::EndFrame(&out, start);
    if (binary_hub_.next_scan_ms == 0) binary_hub_.next_scan_ms = now_ms_ + kHeartbeatScanMs;
  }
  MarkWrite(conn);
}

void Shard::BinaryUnsubscribe(Connection* conn, const bin::RequestView& request) {
  BinaryState& state = *conn->binary;
  uint32_t id = 0;
  if (!bin::ParseUnsubscribe(request.body, &id)) {
    bin::EncodeErrorText(&conn->out, request.id, bin::Status::kError,
                         "ERR malformed UNSUBSCRIBE body");
  } else if (auto it = state.subscriptions.find(id); it == state.subscriptions.end()) {
    bin::EncodeNil(&conn->out, request.id);
  } else {
    binary_hub_.Remove(it->second);
    state.subscriptions.erase(it);
    bin::EncodeOk(&conn->out, request.id);
  }
  MarkWrite(conn);
}

void Shard::BinaryTopology(Connection* conn, const bin::RequestView& request) {
  if (!request.body.empty()) {
    bin::EncodeErrorText(&conn->out, request.id, bin::Status::kError,
                         "ERR malformed TOPOLOGY body");
    MarkWrite(conn);
    return;
  }
  bin::Topology topology;
  if (view_ != nullptr) {
    BuildClusterTopology(*view_, &topology);
    bin::EncodeTopologyReply(&conn->out, request.id, topology);
    MarkWrite(conn);
    return;
  }
  const commands::ServerFacts& server = facts();
  TopologyInput input;
  input.host = HostOf(conn->client.laddr);
  input.client_port = server.tcp_port;
  input.shard_ports = server.shard_ports;
  input.shard_count = options_.count;
  BuildTopology(input, &topology);
  bin::EncodeTopologyReply(&conn->out, request.id, topology);
  MarkWrite(conn);
}

void Shard::BinaryClosed(Connection* conn) {
  for (auto& [id, sub] : conn->binary->subscriptions) binary_hub_.Remove(sub);
  conn->binary->subscriptions.clear();
}

int64_t Shard::BinaryPublish(std::string_view channel, std::string_view message) {
  int64_t receivers = 0;
  binary_hub_.ForEachMatch(channel, [&](BinarySubscription* sub) {
    ++receivers;
    ++sub->seq;
    Connection* conn = sub->conn;
    if (conn->closed || conn->unsent() > kSubscriberOutputLimit) {
      // The gap in the numbers tells the subscriber; the publisher never waits.
      ++stats_.pubsub_dropped_events;
      return;
    }
    bin::EncodeEvent(&conn->out, sub->id, sub->seq, channel, message);
    sub->last_sent_ms = now_ms_;
    MarkWrite(conn);
  });
  return receivers;
}

void Shard::BinaryTick() {
  if (binary_hub_.empty()) {
    binary_hub_.next_scan_ms = 0;
    return;
  }
  if (now_ms_ < binary_hub_.next_scan_ms) return;
  binary_hub_.next_scan_ms = now_ms_ + kHeartbeatScanMs;
  binary_hub_.ForSome(kHeartbeatBudget, [&](BinarySubscription* sub) {
    Connection* conn = sub->conn;
    if (now_ms_ - sub->last_sent_ms < kHeartbeatPeriodMs || conn->closed) return;
    // A heartbeat stuck behind a full output would say nothing new: wait until it drains.
    if (conn->unsent() > kSubscriberOutputLimit) return;
    bin::EncodeHeartbeat(&conn->out, sub->id, sub->seq);
    sub->last_sent_ms = now_ms_;
    MarkWrite(conn);
  });
}

int Shard::BinaryTimeoutMs(int timeout_ms) const {
  if (binary_hub_.empty()) return timeout_ms;
  int64_t until = std::max<int64_t>(0, binary_hub_.next_scan_ms - now_ms_);
  return SoonerTimeout(timeout_ms, static_cast<int>(std::min<int64_t>(until, INT32_MAX)));
}

}  // namespace keep::shard
