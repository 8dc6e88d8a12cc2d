#include "dataplane/cluster/heartbeat.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace keep::cluster {

namespace {

constexpr uint8_t kMagic[4] = {'K', 'H', 'B', 1};
constexpr size_t kMaxPastIncarnations = 8;

void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
uint32_t Get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

void Mac(std::string_view key, const uint8_t* data, size_t size, uint8_t* out) {
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data, size, out, &length);
}

}  // namespace

size_t EncodeHeartbeat(const Heartbeat& hb, std::string_view key, uint8_t* out) {
  size_t id_len = std::min(hb.id.size(), kMaxMemberIdLength);
  std::memcpy(out, kMagic, 4);
  out[4] = static_cast<uint8_t>(hb.state);
  out[5] = static_cast<uint8_t>((hb.fenced ? 1 : 0) | (hb.awaiting_your_pull ? 2 : 0));
  out[6] = static_cast<uint8_t>(id_len);
  out[7] = static_cast<uint8_t>(id_len >> 8);
  Put64(out + 8, hb.incarnation);
  Put64(out + 16, hb.sequence);
  Put64(out + 24, hb.view_epoch);
  Put64(out + 32, hb.known_incarnation);
  Put32(out + 40, hb.slots_owned);
  Put32(out + 44, hb.handoff_in_flight);
  Put32(out + 48, hb.handoff_done);
  Put32(out + 52, hb.handoff_total);
  std::memcpy(out + kHeartbeatHeaderBytes, hb.id.data(), id_len);
  size_t body = kHeartbeatHeaderBytes + id_len;
  Mac(key, out, body, out + body);
  return body + kHeartbeatMacBytes;
}

HeartbeatError DecodeHeartbeat(std::span<const uint8_t> d, std::string_view key, Heartbeat* out) {
  if (d.size() < kHeartbeatHeaderBytes + 1 + kHeartbeatMacBytes || d.size() > kMaxHeartbeatBytes) {
    return HeartbeatError::kMalformed;
  }
  if (std::memcmp(d.data(), kMagic, 4) != 0) return HeartbeatError::kMalformed;
  size_t id_len = d[6] | (static_cast<size_t>(d[7]) << 8);
  if (id_len == 0 || id_len > kMaxMemberIdLength ||
      d.size() != kHeartbeatHeaderBytes + id_len + kHeartbeatMacBytes) {
    return HeartbeatError::kMalformed;
  }
  size_t body = kHeartbeatHeaderBytes + id_len;
  uint8_t expected[kHeartbeatMacBytes];
  Mac(key, d.data(), body, expected);
  if (CRYPTO_memcmp(expected, d.data() + body, kHeartbeatMacBytes) != 0) {
    return HeartbeatError::kForged;
  }
  if (d[4] > static_cast<uint8_t>(MemberState::kLeft) || d[5] > 3)
    return HeartbeatError::kMalformed;
  out->state = static_cast<MemberState>(d[4]);
  out->fenced = (d[5] & 1) != 0;
  out->awaiting_your_pull = (d[5] & 2) != 0;
  out->incarnation = Get64(d.data() + 8);
  out->sequence = Get64(d.data() + 16);
  out->view_epoch = Get64(d.data() + 24);
  out->known_incarnation = Get64(d.data() + 32);
  out->slots_owned = Get32(d.data() + 40);
  out->handoff_in_flight = Get32(d.data() + 44);
  out->handoff_done = Get32(d.data() + 48);
  out->handoff_total = Get32(d.data() + 52);
  out->id.assign(reinterpret_cast<const char*>(d.data() + kHeartbeatHeaderBytes), id_len);
  if (out->incarnation == 0) return HeartbeatError::kMalformed;
  return HeartbeatError::kOk;
}

std::string HmacSha256Hex(std::string_view key, std::string_view message) {
  uint8_t mac[kHeartbeatMacBytes];
  Mac(key, reinterpret_cast<const uint8_t*>(message.data()), message.size(), mac);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : mac) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void PeerTracker::SetMembers(const MemberList& list, int self) {
  std::vector<Peer> next;
  for (size_t i = 0; i < list.members.size(); ++i) {
    Peer peer;
    for (Peer& old : peers_) {
      if (old.id == list.members[i].id) peer = std::move(old);
    }
    peer.id = list.members[i].id;
    peer.self = static_cast<int>(i) == self;
    next.push_back(std::move(peer));
  }
  peers_ = std::move(next);
}

PeerTracker::Verdict PeerTracker::OnHeartbeat(const Heartbeat& hb, int64_t now_ns, bool* changed) {
  *changed = false;
  auto it =
      std::find_if(peers_.begin(), peers_.end(), [&](const Peer& p) { return p.id == hb.id; });
  if (it == peers_.end()) return Verdict::kUnknownMember;
  Peer& peer = *it;
  if (peer.self) return Verdict::kSelf;
  if (hb.incarnation == peer.incarnation) {
    if (hb.sequence <= peer.last_sequence) return Verdict::kReplayed;
    uint64_t gap = hb.sequence - peer.last_sequence - 1;
    // A gap larger than a few seconds' worth is a pause, not loss; count it once.
    peer.lost += std::min<uint64_t>(gap, 1000);
  } else {
    if (std::find(peer.past_incarnations.begin(), peer.past_incarnations.end(), hb.incarnation) !=
        peer.past_incarnations.end()) {
      return Verdict::kReplayed;
    }
    // A new life of this id: whatever the old one held is gone.
    if (peer.incarnation != 0) {
      peer.past_incarnations.push_back(peer.incarnation);
      if (peer.past_incarnations.size() > kMaxPastIncarnations) peer.past_incarnations.pop_front();
    }
    peer.incarnation = hb.incarnation;
    *changed = true;
  }
  peer.last_sequence = hb.sequence;
  peer.last_heard_ns = now_ns;
  ++peer.received;
  if (!peer.alive || peer.announced != hb.state) *changed = true;
  peer.alive = true;
  peer.announced = hb.state;
  if (!hb.awaiting_your_pull) {
    peer.awaiting_pull_since_ns = 0;
  } else if (peer.awaiting_pull_since_ns == 0) {
    peer.awaiting_pull_since_ns = now_ns;
  }
  return Verdict::kAccepted;
}

bool PeerTracker::Expire(int64_t now_ns) {
  bool changed = false;
  for (Peer& peer : peers_) {
    if (!peer.self && peer.alive && now_ns - peer.last_heard_ns > kFailureDetectionMs * 1'000'000) {
      peer.alive = false;
      changed = true;
    }
  }
  return changed;
}

int64_t PeerTracker::NextDeadlineNs() const {
  int64_t next = INT64_MAX;
  for (const Peer& peer : peers_) {
    if (!peer.self && peer.alive) {
      next = std::min(next, peer.last_heard_ns + kFailureDetectionMs * 1'000'000 + 1);
    }
  }
  return next;
}

size_t PeerTracker::HeardCount() const {
  size_t count = 0;
  for (const Peer& peer : peers_) count += (peer.self || peer.alive) ? 1 : 0;
  return count;
}

size_t PeerTracker::DepartedCount() const {
  size_t count = 0;
  for (const Peer& peer : peers_) {
    count += (!peer.self && !peer.alive && peer.announced == MemberState::kLeft) ? 1 : 0;
  }
  return count;
}

std::vector<MemberStatus> PeerTracker::Statuses() const {
  std::vector<MemberStatus> out;
  for (const Peer& peer : peers_) {
    out.push_back({peer.self || peer.alive, peer.announced, peer.incarnation,
                   peer.alive && peer.awaits_pull});
  }
  return out;
}

bool PeerTracker::SettleAwaitingPull(int64_t now_ns) {
  bool changed = false;
  for (Peer& peer : peers_) {
    const bool awaits = peer.alive && peer.awaiting_pull_since_ns != 0 &&
                        now_ns - peer.awaiting_pull_since_ns >= kAwaitingPullGraceMs * 1'000'000;
    if (awaits != peer.awaits_pull) {
      peer.awaits_pull = awaits;
      changed = true;
    }
  }
  return changed;
}

}  // namespace keep::cluster
