#include "dataplane/cluster/heartbeat.h"

#include <gtest/gtest.h>

namespace keep::cluster {
namespace {

Heartbeat Sample(const char* id = "keep-1") {
  Heartbeat hb;
  hb.id = id;
  hb.incarnation = 42;
  hb.sequence = 7;
  hb.view_epoch = 3;
  hb.known_incarnation = 9;
  hb.state = MemberState::kLeaving;
  hb.fenced = true;
  hb.slots_owned = 100;
  hb.handoff_in_flight = 2;
  hb.handoff_done = 3;
  hb.handoff_total = 5;
  return hb;
}

TEST(Heartbeat, RoundTrips) {
  uint8_t buffer[kMaxHeartbeatBytes];
  size_t size = EncodeHeartbeat(Sample(), "key", buffer);
  EXPECT_EQ(size, kHeartbeatHeaderBytes + 6 + kHeartbeatMacBytes);
  Heartbeat out;
  ASSERT_EQ(DecodeHeartbeat({buffer, size}, "key", &out), HeartbeatError::kOk);
  EXPECT_EQ(out.id, "keep-1");
  EXPECT_EQ(out.incarnation, 42u);
  EXPECT_EQ(out.sequence, 7u);
  EXPECT_EQ(out.known_incarnation, 9u);
  EXPECT_EQ(out.state, MemberState::kLeaving);
  EXPECT_TRUE(out.fenced);
  EXPECT_FALSE(out.awaiting_your_pull);
  EXPECT_EQ(out.handoff_total, 5u);
  Heartbeat awaiting = Sample();
  awaiting.fenced = false;
  awaiting.awaiting_your_pull = true;
  size = EncodeHeartbeat(awaiting, "key", buffer);
  ASSERT_EQ(DecodeHeartbeat({buffer, size}, "key", &out), HeartbeatError::kOk);
  EXPECT_FALSE(out.fenced);
  EXPECT_TRUE(out.awaiting_your_pull);
}

TEST(Heartbeat, RejectsForgedTruncatedAndGarbage) {
  uint8_t buffer[kMaxHeartbeatBytes];
  size_t size = EncodeHeartbeat(Sample(), "key", buffer);
  Heartbeat out;
  EXPECT_EQ(DecodeHeartbeat({buffer, size}, "other", &out), HeartbeatError::kForged);
  for (size_t cut = 0; cut < size; ++cut) {
    EXPECT_NE(DecodeHeartbeat({buffer, cut}, "key", &out), HeartbeatError::kOk) << cut;
  }
  for (size_t i = 0; i < size; ++i) {
    uint8_t copy[kMaxHeartbeatBytes];
    std::copy(buffer, buffer + size, copy);
    copy[i] ^= 0x40;
    EXPECT_NE(DecodeHeartbeat({copy, size}, "key", &out), HeartbeatError::kOk) << i;
  }
  uint8_t big[4096] = {'K', 'H', 'B', 1};
  EXPECT_EQ(DecodeHeartbeat({big, sizeof(big)}, "key", &out), HeartbeatError::kMalformed);
}

TEST(PeerTracker, DetectsFailureReplaysAndNewLives) {
  MemberList list;
  ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,keep-1@h:3:4:1,c@h:5:6:1", &list), "");
  PeerTracker tracker;
  tracker.SetMembers(list, 0);
  EXPECT_EQ(tracker.HeardCount(), 1u);
  Heartbeat hb = Sample();
  bool changed = false;
  int64_t ms = 1'000'000;
  EXPECT_EQ(tracker.OnHeartbeat(hb, 1000 * ms, &changed), PeerTracker::Verdict::kAccepted);
  EXPECT_TRUE(changed);
  EXPECT_EQ(tracker.HeardCount(), 2u);
  EXPECT_EQ(tracker.OnHeartbeat(hb, 1001 * ms, &changed), PeerTracker::Verdict::kReplayed);
  hb.sequence = 10;  // 8 and 9 lost
  EXPECT_EQ(tracker.OnHeartbeat(hb, 1010 * ms, &changed), PeerTracker::Verdict::kAccepted);
  EXPECT_FALSE(changed);
  EXPECT_EQ(tracker.Lost(1), 2u);
  EXPECT_FALSE(tracker.Expire(1010 * ms + kFailureDetectionMs * ms));
  EXPECT_TRUE(tracker.Expire(1011 * ms + kFailureDetectionMs * ms));
  EXPECT_EQ(tracker.HeardCount(), 1u);
  // A new life, then a replay of the old one.
  Heartbeat reborn = hb;
  reborn.incarnation = 43;
  reborn.sequence = 1;
  EXPECT_EQ(tracker.OnHeartbeat(reborn, 2000 * ms, &changed), PeerTracker::Verdict::kAccepted);
  EXPECT_TRUE(changed);
  EXPECT_EQ(tracker.Incarnation(1), 43u);
  hb.sequence = 99;
  EXPECT_EQ(tracker.OnHeartbeat(hb, 2001 * ms, &changed), PeerTracker::Verdict::kReplayed);
  Heartbeat stranger = Sample("zz");
  EXPECT_EQ(tracker.OnHeartbeat(stranger, 2001 * ms, &changed),
            PeerTracker::Verdict::kUnknownMember);
  Heartbeat self = Sample("a");
  EXPECT_EQ(tracker.OnHeartbeat(self, 2001 * ms, &changed), PeerTracker::Verdict::kSelf);
}

TEST(PeerTracker, AwaitingPullCountsOnlyAfterTheGraceAndWhileHeard) {
  MemberList list;
  ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,keep-1@h:3:4:1", &list), "");
  PeerTracker tracker;
  tracker.SetMembers(list, 0);
  Heartbeat hb = Sample();
  hb.awaiting_your_pull = true;
  bool changed = false;
  const int64_t ms = 1'000'000;
  int64_t now = 1000 * ms;
  auto beat = [&](bool awaiting) {
    hb.awaiting_your_pull = awaiting;
    ++hb.sequence;
    now += 25 * ms;
    ASSERT_EQ(tracker.OnHeartbeat(hb, now, &changed), PeerTracker::Verdict::kAccepted);
  };
  beat(true);
  EXPECT_FALSE(tracker.SettleAwaitingPull(now));
  EXPECT_FALSE(tracker.Statuses()[1].awaits_my_pull);
  while (now < 1025 * ms + kAwaitingPullGraceMs * ms) beat(true);
  EXPECT_TRUE(tracker.SettleAwaitingPull(now));
  EXPECT_TRUE(tracker.Statuses()[1].awaits_my_pull);
  EXPECT_FALSE(tracker.SettleAwaitingPull(now));
  // One heartbeat without the flag ends the episode; the grace starts over.
  beat(false);
  EXPECT_TRUE(tracker.SettleAwaitingPull(now));
  EXPECT_FALSE(tracker.Statuses()[1].awaits_my_pull);
  beat(true);
  EXPECT_FALSE(tracker.SettleAwaitingPull(now));
  // A silent member awaits nothing.
  now += kAwaitingPullGraceMs * ms;
  EXPECT_TRUE(tracker.Expire(now));
  EXPECT_FALSE(tracker.SettleAwaitingPull(now));
  EXPECT_FALSE(tracker.Statuses()[1].awaits_my_pull);
}

TEST(Heartbeat, AdminTokenIsHmacHex) {
  std::string token = HmacSha256Hex("peer", "keep-admin");
  EXPECT_EQ(token.size(), 64u);
  EXPECT_TRUE(ConstantTimeEquals(token, HmacSha256Hex("peer", "keep-admin")));
  EXPECT_FALSE(ConstantTimeEquals(token, HmacSha256Hex("peer2", "keep-admin")));
  EXPECT_FALSE(ConstantTimeEquals(token, token.substr(1)));
}

}  // namespace
}  // namespace keep::cluster
