#include "dataplane/cluster/view.h"

#include <gtest/gtest.h>

namespace keep::cluster {
namespace {

std::unique_ptr<View> TwoMemberView() {
  auto view = std::make_unique<View>();
  view->self = 0;
  ViewMember a, b;
  a.member = {"a", "127.0.0.1", 7000, 7001, 1, 0};
  a.endpoints = {"127.0.0.1:7000"};
  b.member = {"b", "127.0.0.2", 7000, 7001, 2, 7100};
  b.endpoints = {"127.0.0.2:7100", "127.0.0.2:7101"};
  view->members = {a, b};
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    view->owner[slot] = slot < 100 ? 0 : 1;
    view->phase[slot] = slot < 100 ? SlotPhase::kOwned : SlotPhase::kNotOwned;
  }
  view->phase[50] = SlotPhase::kExporting;
  return view;
}

TEST(View, RoutesAndWordsErrorsAsRedis) {
  auto view = TwoMemberView();
  std::string error;
  EXPECT_EQ(RouteSlot(*view, 1), SlotRoute::kServe);
  EXPECT_EQ(RouteSlot(*view, 50), SlotRoute::kTryAgain);
  RouteError(*view, 50, SlotRoute::kTryAgain, &error);
  EXPECT_EQ(error, "TRYAGAIN Multiple keys request during rehashing of slot");
  EXPECT_EQ(RouteSlot(*view, 101), SlotRoute::kMoved);
  RouteError(*view, 101, SlotRoute::kMoved, &error);
  EXPECT_EQ(error, "MOVED 101 127.0.0.2:7101");  // shard 101 % 2 of the owner
  RouteError(*view, 102, SlotRoute::kMoved, &error);
  EXPECT_EQ(error, "MOVED 102 127.0.0.2:7100");
  view->fenced = true;
  EXPECT_EQ(RouteSlot(*view, 1), SlotRoute::kFenced);
  RouteError(*view, 1, SlotRoute::kFenced, &error);
  EXPECT_EQ(error, "CLUSTERDOWN The cluster is down");
}

TEST(ViewPublisher, FreesRetiredViewsOnlyAfterEveryReaderMovedOn) {
  ViewPublisher publisher(2);
  EXPECT_EQ(publisher.BeginTurn(0), nullptr);
  publisher.Publish(TwoMemberView());
  const View* first = publisher.BeginTurn(0);
  ASSERT_NE(first, nullptr);
  publisher.BeginTurn(1);
  publisher.Publish(TwoMemberView());
  EXPECT_EQ(publisher.Reclaim(), 1u);  // both readers may still hold `first`
  const View* second = publisher.BeginTurn(0);
  EXPECT_NE(second, first);
  EXPECT_EQ(publisher.Reclaim(), 1u);  // reader 1 has not moved on
  EXPECT_EQ(publisher.BeginTurn(1), second);
  EXPECT_EQ(publisher.Reclaim(), 0u);
}

}  // namespace
}  // namespace keep::cluster
