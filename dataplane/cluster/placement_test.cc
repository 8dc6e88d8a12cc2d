#include "dataplane/cluster/placement.h"

#include <gtest/gtest.h>

#include <vector>

namespace keep::cluster {
namespace {

TEST(Placement, BalancedAndMovesOnlyTheLeaversSlots) {
  uint64_t seed = PlacementSeed("secret");
  std::vector<std::string_view> ids = {"keep-0", "keep-1", "keep-2", "keep-3"};
  bool all[] = {true, true, true, true};
  std::array<uint16_t, core::kSlotCount> before{}, after{};
  ComputeOwners(seed, ids, all, &before);
  std::vector<int> counts(4, 0);
  for (uint16_t o : before) ++counts[o];
  for (int c : counts) {
    EXPECT_GT(c, 3600);
    EXPECT_LT(c, 4600);
  }
  bool without_2[] = {true, true, false, true};
  ComputeOwners(seed, ids, without_2, &after);
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    if (before[slot] != 2) {
      EXPECT_EQ(after[slot], before[slot]);
    } else {
      EXPECT_NE(after[slot], 2);
    }
  }
  bool none[] = {false, false, false, false};
  ComputeOwners(seed, ids, none, &after);
  EXPECT_EQ(after[0], kNoOwner);
}

TEST(Placement, DependsOnTheSecret) {
  EXPECT_NE(PlacementScore(PlacementSeed("a"), 1, "keep-0"),
            PlacementScore(PlacementSeed("b"), 1, "keep-0"));
  EXPECT_EQ(PlacementScore(PlacementSeed("a"), 1, "keep-0"),
            PlacementScore(PlacementSeed("a"), 1, "keep-0"));
}

}  // namespace
}  // namespace keep::cluster
