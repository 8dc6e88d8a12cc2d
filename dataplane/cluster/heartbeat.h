// Heartbeats (design §3.4): every 25 ms each member sends every other member one UDP datagram
// on the peer port saying who it is (id, incarnation), a sequence number, its view epoch, its
// state and handoff progress. Datagrams are authenticated with HMAC-SHA256 keyed by the peer
// secret; per-(member, incarnation) sequence numbers reject replays. PeerTracker is the failure
// detector: a member silent for 225 ms is dead, and a new incarnation is a new life.
//
// Wire format (little endian), 88 + id bytes, at most 152:
//   0  "KHB" 0x01         magic and version
//   4  u8 state           MemberState
//   5  u8 flags           bit 0: fenced; bit 1: the sender holds slots it is handing to the
//                         receiver and waits for the receiver to pull them
//   6  u16 id_len         1..64
//   8  u64 incarnation    random per boot, never 0
//  16  u64 sequence       grows by one per datagram sent by this incarnation
//  24  u64 view_epoch
//  32  u64 known_incarnation  the receiver's incarnation as the sender last heard it (0: never);
//                             a booting member learns from it that it had a previous life
//  40  u32 slots_owned, u32 handoff_in_flight, u32 handoff_done, u32 handoff_total
//  56  id bytes
//  56+id_len  32-byte HMAC-SHA256 over every byte before it
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/cluster/member_list.h"
#include "dataplane/cluster/view.h"
#include "dataplane/cluster/view_builder.h"

namespace keep::cluster {

inline constexpr int64_t kHeartbeatPeriodMs = 25;
inline constexpr int64_t kFailureDetectionMs = 225;
// A member that announces it awaits this member's pull for this long, while this member pulls
// nothing from it, exports slots this member never saw leave (see ViewBuilder): far longer than
// a normal handoff takes to start, and to be released once pulled.
inline constexpr int64_t kAwaitingPullGraceMs = 500;
inline constexpr size_t kHeartbeatHeaderBytes = 56;
inline constexpr size_t kHeartbeatMacBytes = 32;
inline constexpr size_t kMaxHeartbeatBytes =
    kHeartbeatHeaderBytes + kMaxMemberIdLength + kHeartbeatMacBytes;

struct Heartbeat {
  std::string id;
  uint64_t incarnation = 0;
  uint64_t sequence = 0;
  uint64_t view_epoch = 0;
  uint64_t known_incarnation = 0;
  MemberState state = MemberState::kJoining;
  bool fenced = false;
  // Per receiver: the sender exports slots to it. A receiver that never saw those slots leave it
  // (the sender alone thought it dead for a moment) learns here that it must pull them back.
  bool awaiting_your_pull = false;
  uint32_t slots_owned = 0;
  uint32_t handoff_in_flight = 0;
  uint32_t handoff_done = 0;
  uint32_t handoff_total = 0;
};

enum class HeartbeatError : uint8_t { kOk, kMalformed, kForged };

// Writes the datagram into `out` (at least kMaxHeartbeatBytes); returns its size.
size_t EncodeHeartbeat(const Heartbeat& heartbeat, std::string_view key, uint8_t* out);
// Checks bounds before anything else, then the MAC (in constant time), then the fields.
HeartbeatError DecodeHeartbeat(std::span<const uint8_t> datagram, std::string_view key,
                               Heartbeat* out);

// hex(HMAC-SHA256(key, message)).
std::string HmacSha256Hex(std::string_view key, std::string_view message);
// Constant-time comparison of two strings (of possibly different lengths).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// The failure detector's view of the other members. Times are CLOCK_MONOTONIC_RAW nanoseconds.
class PeerTracker {
 public:
  enum class Verdict : uint8_t { kAccepted, kUnknownMember, kReplayed, kSelf };

  // Sets the members to track (keeps what it knows about ids still listed).
  void SetMembers(const MemberList& list, int self);

  // An authenticated heartbeat. *changed is set when the member's liveness, state or
  // incarnation changed (the view must be rebuilt).
  Verdict OnHeartbeat(const Heartbeat& heartbeat, int64_t now_ns, bool* changed);
  // Marks members silent for longer than kFailureDetectionMs dead; true if any changed.
  bool Expire(int64_t now_ns);

  // When the next alive member is declared dead if it stays silent (INT64_MAX if none).
  int64_t NextDeadlineNs() const;
  // Members heard (alive), this member included.
  size_t HeardCount() const;
  // Members that announced `left` and then went silent: they handed everything over and exited,
  // so they no longer count towards the majority (two disjoint groups still cannot both hold a
  // majority of the members that remain, and a left member never serves again in that life).
  size_t DepartedCount() const;
  std::vector<MemberStatus> Statuses() const;
  // Settles, for every member, whether it has been awaiting this member's pull (see
  // Heartbeat::awaiting_your_pull) for kAwaitingPullGraceMs; true if any verdict changed.
  bool SettleAwaitingPull(int64_t now_ns);
  // The incarnation last heard from member `index` (0 when never).
  uint64_t Incarnation(size_t index) const { return peers_[index].incarnation; }
  uint64_t Received(size_t index) const { return peers_[index].received; }
  uint64_t Lost(size_t index) const { return peers_[index].lost; }

 private:
  struct Peer {
    std::string id;
    bool self = false;
    bool alive = false;
    MemberState announced = MemberState::kJoining;
    uint64_t incarnation = 0;
    uint64_t last_sequence = 0;
    int64_t last_heard_ns = 0;
    int64_t awaiting_pull_since_ns = 0;  // 0: its last heartbeat did not await a pull
    bool awaits_pull = false;            // ... and has for kAwaitingPullGraceMs
    uint64_t received = 0;
    uint64_t lost = 0;                       // sequence gaps: datagrams that never arrived
    std::deque<uint64_t> past_incarnations;  // replays of these are refused
  };
  std::vector<Peer> peers_;
};

}  // namespace keep::cluster
