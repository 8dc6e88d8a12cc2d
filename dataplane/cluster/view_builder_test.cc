#include "dataplane/cluster/view_builder.h"

#include <gtest/gtest.h>

namespace keep::cluster {
namespace {

class ViewBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,b@h:3:4:1,c@h:5:6:1", &list_), "");
  }
  ViewBuilder::Input Input(std::vector<bool> alive, bool handoff = false) {
    ViewBuilder::Input in;
    in.list = &list_;
    in.self = 0;
    in.self_state = MemberState::kUp;
    in.self_incarnation = 1;
    for (bool a : alive) in.status.push_back({a, peer_state_, 7});
    in.handoff = handoff;
    in.now_ms = now_ms_;
    return in;
  }
  static int Count(const View& v, SlotPhase phase) {
    int n = 0;
    for (SlotPhase p : v.phase) n += p == phase ? 1 : 0;
    return n;
  }
  MemberList list_;
  MemberState peer_state_ = MemberState::kJoining;  // a cluster starting from scratch
  int64_t now_ms_ = 1'000'000;
  ViewBuilder builder_{ViewBuilder::Options{PlacementSeed("s"), core::SlotHash::kKeyed, 5000}};
};

TEST_F(ViewBuilderTest, FirstViewOwnsItsShareWithoutQuarantine) {
  MoveEvents events;
  auto view = builder_.Build(Input({true, true, true}), &events);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->epoch, 1u);
  int owned = Count(*view, SlotPhase::kOwned);
  EXPECT_EQ(static_cast<uint32_t>(owned), view->members[0].slots_owned);
  EXPECT_GT(owned, 5000);
  EXPECT_EQ(owned + Count(*view, SlotPhase::kNotOwned), static_cast<int>(core::kSlotCount));
  for (int64_t q : view->lock_quarantine_until_ms) EXPECT_EQ(q, 0);
  // Nothing changed: no new view.
  EXPECT_EQ(builder_.Build(Input({true, true, true}), &events), nullptr);
}

TEST_F(ViewBuilderTest, SlotsOfADeadMemberOpenWithQuarantine) {
  MoveEvents events;
  auto first = builder_.Build(Input({true, true, true}), &events);
  auto second = builder_.Build(Input({true, false, true}), &events);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->epoch, 2u);
  EXPECT_EQ(second->members[1].state, MemberState::kDown);
  int gained = 0;
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    if (first->owner[slot] == 1 && second->owner[slot] == 0) {
      ++gained;
      EXPECT_EQ(second->phase[slot], SlotPhase::kOwned);
      EXPECT_EQ(second->lock_quarantine_until_ms[slot], now_ms_ + 5000);
    } else if (first->owner[slot] == 0) {
      EXPECT_EQ(second->lock_quarantine_until_ms[slot], 0);
    }
  }
  EXPECT_GT(gained, 1000);
  EXPECT_TRUE(events.imports.empty());
}

TEST_F(ViewBuilderTest, HandoffPhasesUntilFinished) {
  MoveEvents boot;
  auto first = builder_.Build(Input({true, true, false}, true), &boot);
  // With a handoff engine, the first view asks b (joining) for the slots this member gains: b
  // might hold keys already.
  ASSERT_FALSE(boot.imports.empty());
  for (const SlotMove& move : boot.imports) {
    EXPECT_EQ(move.peer, "b");
    EXPECT_EQ(first->phase[move.slot], SlotPhase::kImporting);
    EXPECT_TRUE(builder_.FinishMove(move.slot));
  }
  MoveEvents events;
  auto settled = builder_.Build(Input({true, true, false}, true), &events);
  ASSERT_NE(settled, nullptr);
  EXPECT_EQ(Count(*settled, SlotPhase::kImporting), 0);
  for (int64_t q : settled->lock_quarantine_until_ms) EXPECT_EQ(q, 0);
  // c joins: this member exports the slots c wins.
  auto second = builder_.Build(Input({true, true, true}, true), &events);
  ASSERT_NE(second, nullptr);
  ASSERT_FALSE(events.exports.empty());
  EXPECT_TRUE(events.imports.empty());
  uint32_t slot = events.exports[0].slot;
  EXPECT_EQ(events.exports[0].peer, "c");
  EXPECT_EQ(second->phase[slot], SlotPhase::kExporting);
  EXPECT_EQ(RouteSlot(*second, slot), SlotRoute::kTryAgain);
  EXPECT_EQ(builder_.progress().in_flight, events.exports.size());
  EXPECT_TRUE(builder_.FinishMove(slot));
  EXPECT_FALSE(builder_.FinishMove(slot));
  MoveEvents more;
  auto third = builder_.Build(Input({true, true, true}, true), &more);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(third->phase[slot], SlotPhase::kNotOwned);
  EXPECT_TRUE(more.exports.empty());
  EXPECT_EQ(builder_.progress().done, boot.imports.size() + 1);
  // c dies: the remaining exports are cancelled and their slots come back.
  MoveEvents cancel;
  auto fourth = builder_.Build(Input({true, true, false}, true), &cancel);
  EXPECT_EQ(cancel.cancelled.size(), events.exports.size() - 1);
  EXPECT_EQ(builder_.progress().in_flight, 0u);
}

TEST_F(ViewBuilderTest, SlotsAPeerServedWhileItThoughtThisMemberDeadArePulledBackOnce) {
  peer_state_ = MemberState::kUp;
  MoveEvents events;
  auto first = builder_.Build(Input({true, true, true}), &events);
  // This member saw nothing; b alone thought it dead, served its slots (b is next in line for
  // some), and now exports them back and waits. A first build asks b for exactly those.
  auto in = Input({true, true, true}, true);
  in.status[1].awaits_my_pull = true;
  MoveEvents reclaim;
  auto second = builder_.Build(in, &reclaim);
  ASSERT_NE(second, nullptr);
  ASSERT_FALSE(reclaim.imports.empty());
  std::array<uint16_t, core::kSlotCount> without_self;
  std::vector<std::string_view> ids = {"a", "b", "c"};
  bool others[] = {false, true, true};
  ComputeOwners(PlacementSeed("s"), ids, others, &without_self);
  size_t expected = 0;
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    if (first->owner[slot] == 0 && without_self[slot] == 1) ++expected;
  }
  EXPECT_EQ(reclaim.imports.size(), expected);
  for (const SlotMove& move : reclaim.imports) {
    EXPECT_EQ(move.peer, "b");
    EXPECT_EQ(first->owner[move.slot], 0);
    EXPECT_EQ(without_self[move.slot], 1);
    EXPECT_EQ(second->phase[move.slot], SlotPhase::kImporting);
  }
  // The pulls complete while b still announces it waits (it has not released yet): the same
  // episode is not answered twice.
  for (const SlotMove& move : reclaim.imports) EXPECT_TRUE(builder_.FinishMove(move.slot));
  MoveEvents again;
  auto third = builder_.Build(in, &again);
  EXPECT_TRUE(again.imports.empty());
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(Count(*third, SlotPhase::kImporting), 0);
  // A later episode is.
  MoveEvents over;
  builder_.Build(Input({true, true, true}, true), &over);
  MoveEvents next;
  builder_.Build(in, &next);
  EXPECT_EQ(next.imports.size(), expected);
}

TEST_F(ViewBuilderTest, LeavingHandsEverythingOver) {
  MoveEvents events;
  builder_.Build(Input({true, true, true}), &events);
  auto in = Input({true, true, true});
  in.self_state = MemberState::kLeaving;
  auto view = builder_.Build(in, &events);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(Count(*view, SlotPhase::kOwned), 0);
  EXPECT_EQ(view->members[0].slots_owned, 0u);
}

TEST_F(ViewBuilderTest, JoiningAServingClusterIsAMove) {
  peer_state_ = MemberState::kUp;
  // The peers already serve (state up): without a handoff the slots this member gains open with
  // the quarantine; with one they are imported.
  MoveEvents events;
  auto view = builder_.Build(Input({true, true, true}), &events);
  int quarantined = 0;
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    if (view->phase[slot] == SlotPhase::kOwned) {
      EXPECT_EQ(view->lock_quarantine_until_ms[slot], now_ms_ + 5000);
      ++quarantined;
    }
  }
  EXPECT_GT(quarantined, 5000);
  ViewBuilder with_handoff{ViewBuilder::Options{PlacementSeed("s"), core::SlotHash::kKeyed, 5000}};
  auto in = Input({true, true, true}, true);
  auto imported = with_handoff.Build(in, &events);
  EXPECT_EQ(events.imports.size(), static_cast<size_t>(quarantined));
  EXPECT_EQ(imported->phase[events.imports[0].slot], SlotPhase::kImporting);
}

TEST_F(ViewBuilderTest, BootQuarantineCoversOwnSlots) {
  builder_.QuarantineOwnSlotsUntil(now_ms_ + 9000);
  MoveEvents events;
  auto view = builder_.Build(Input({true, true, true}), &events);
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    EXPECT_EQ(view->lock_quarantine_until_ms[slot],
              view->phase[slot] == SlotPhase::kOwned ? now_ms_ + 9000 : 0);
  }
}

}  // namespace
}  // namespace keep::cluster
