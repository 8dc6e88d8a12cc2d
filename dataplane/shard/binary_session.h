// The server side of Keep's binary protocol (dataplane/proto/binary_protocol.md, design §2.7):
// the per-connection state of a binary session and the shard's registry of binary subscriptions.
// The shard picks the protocol from a connection's first byte (0x00-0x1f binary, else RESP) and
// hands binary input to Shard::BinaryInput (binary_session.cc). Typed ops become the RESP command
// that implements them (proto::binary::TypedToCommand, the one mapping table) and run through the
// shard's ordinary Dispatch, so both protocols share every handler, route and error. Unlike RESP,
// a binary reply is written the moment it completes: a request forwarded to another shard never
// holds back a local one behind it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dataplane/cluster/view.h"
#include "dataplane/commands/glob_util.h"
#include "dataplane/proto/binary_codec.h"

namespace keep::shard {

struct Connection;

// Backpressure for binary connections (design §2.4): instead of queueing without bound, a request
// that would be forwarded while the connection already has this many forwarded requests in flight,
// or while this many requests for the owning shard wait to enter the ring to it, is answered
// BUSY with kBusyRetryMs.
inline constexpr uint32_t kBinaryMaxInflight = 1024;
inline constexpr size_t kBinaryMaxQueuedPerRing = 1024;
inline constexpr uint32_t kBusyRetryMs = 1;
// A subscriber whose unsent output is above this loses events (counted in
// pubsub_dropped_events); it never slows the publisher or the shard.
inline constexpr size_t kSubscriberOutputLimit = 1024 * 1024;
inline constexpr int64_t kHeartbeatPeriodMs = 100;
// How often the shard loop looks for idle subscriptions, and how many it examines per look.
inline constexpr int64_t kHeartbeatScanMs = 10;
inline constexpr size_t kHeartbeatBudget = 1024;

struct BinarySubscription {
  Connection* conn = nullptr;
  uint32_t id = 0;
  bool pattern = false;
  std::string name;
  uint64_t seq = 0;          // publishes that matched, delivered or not
  int64_t last_sent_ms = 0;  // the last event or heartbeat written
  size_t index = 0;          // position in BinaryHub::all
};

// What a binary connection carries besides the Connection's buffers.
struct BinaryState {
  bool preface_done = false;
  std::array<char, proto::binary::kNonceSize> nonce{};
  size_t skip_remaining = 0;  // bytes of a TOO_LARGE frame still to discard as they arrive
  uint32_t inflight = 0;      // forwarded requests whose replies have not come back
  proto::binary::Decoder decoder;
  proto::binary::CommandScratch scratch;
  std::vector<std::string_view> command_args;
  std::string error;
  // The request being dispatched: a local reply lands in `resp`; a forwarded one is tagged and
  // marked deferred.
  std::string resp;
  uint32_t current_id = 0;
  uint8_t current_op = 0;
  uint8_t current_flags = 0;
  bool deferred = false;
  // Set by the cluster check when it refused the request (MOVED, TRYAGAIN, CLUSTERDOWN): the
  // reply is then a status for every op, COMMAND included, since the command did not run.
  bool route_refused = false;
  std::unordered_map<uint32_t, BinarySubscription*> subscriptions;

  explicit BinaryState(proto::binary::Limits limits) : decoder(limits) {}
};

// Every binary subscription of one shard.
class BinaryHub {
 public:
  BinarySubscription* Add(Connection* conn, uint32_t id, bool pattern, std::string_view name,
                          int64_t now_ms);
  void Remove(BinarySubscription* sub);
  bool empty() const { return all_.empty(); }

  // Calls `fn(sub)` for each subscription matching a publish on `channel`.
  template <typename Fn>
  void ForEachMatch(std::string_view channel, Fn&& fn);
  // Up to `budget` subscriptions, round robin across calls.
  template <typename Fn>
  void ForSome(size_t budget, Fn&& fn);

  int64_t next_scan_ms = 0;

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::vector<BinarySubscription*>, NameHash, std::equal_to<>>
      channels_;
  std::vector<BinarySubscription*> patterns_;
  std::vector<std::unique_ptr<BinarySubscription>> all_;
  size_t cursor_ = 0;
};

// The commands a COMMAND op may not run: they change the connection's RESP mode or its
// authentication, which the binary protocol does with its own ops (SUBSCRIBE, HELLO).
bool RefusedOverBinary(std::string_view command_name);

// TOPOLOGY on one member: each shard as an endpoint with the slots it owns. `shard_ports` empty
// (shard ports off) gives one endpoint, the client port, owning every slot; the one member has an
// empty id.
struct TopologyInput {
  std::string_view host;
  int client_port = 0;
  std::vector<int> shard_ports;
  int shard_count = 1;
  uint64_t view_epoch = 0;
};
void BuildTopology(const TopologyInput& input, proto::binary::Topology* topology);
// TOPOLOGY in cluster mode, from this member's view (design §3.6): every member, and every shard
// of every member as an endpoint (the address MOVED names) with the slots the view gives it,
// consecutive slots of one endpoint as one range. Strings are views into `view`.
void BuildClusterTopology(const cluster::View& view, proto::binary::Topology* topology);

// HMAC-SHA256(secret, nonce) compared in constant time against `proof`.
bool ValidProof(std::string_view secret, std::string_view nonce, std::string_view proof);

template <typename Fn>
void BinaryHub::ForEachMatch(std::string_view channel, Fn&& fn) {
  if (auto it = channels_.find(channel); it != channels_.end()) {
    for (BinarySubscription* sub : it->second) fn(sub);
  }
  for (BinarySubscription* sub : patterns_) {
    if (commands::StringMatch(sub->name, channel)) fn(sub);
  }
}

template <typename Fn>
void BinaryHub::ForSome(size_t budget, Fn&& fn) {
  size_t n = std::min(budget, all_.size());
  for (size_t i = 0; i < n; ++i) {
    if (cursor_ >= all_.size()) cursor_ = 0;
    fn(all_[cursor_++].get());
  }
}

}  // namespace keep::shard
