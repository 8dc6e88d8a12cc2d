#include "dataplane/core/slot.h"

#include <gtest/gtest.h>

namespace keep::core {
namespace {

TEST(SlotTest, Crc16CheckValue) { EXPECT_EQ(Crc16Xmodem("123456789"), 0x31C3); }

TEST(SlotTest, HashTagRules) {
  EXPECT_EQ(HashTag("{user1}.a"), "user1");
  EXPECT_EQ(HashTag("foo{}{bar}"), "foo{}{bar}");
  EXPECT_EQ(HashTag("foo{{bar}}zap"), "{bar");
  EXPECT_EQ(HashTag("foo{bar}{zap}"), "bar");
  EXPECT_EQ(HashTag("nobraces"), "nobraces");
  EXPECT_EQ(HashTag("open{only"), "open{only");
}

TEST(SlotTest, Crc16MatchesRedisCluster) {
  SlotFunction slot(SlotHash::kCrc16, "");
  // Values from redis-cli CLUSTER KEYSLOT against Redis Cluster.
  EXPECT_EQ(slot("foo"), 12182u);
  EXPECT_EQ(slot("bar"), 5061u);
  EXPECT_EQ(slot("{user1}.a"), slot("{user1}.b"));
}

TEST(SlotTest, KeyedDependsOnSecretAndHonoursTags) {
  SlotFunction a(SlotHash::kKeyed, "secret-a");
  SlotFunction b(SlotHash::kKeyed, "secret-b");
  int differ = 0;
  for (int i = 0; i < 100; ++i) {
    std::string key = "key:" + std::to_string(i);
    EXPECT_LT(a(key), kSlotCount);
    differ += a(key) != b(key);
  }
  EXPECT_GT(differ, 90);
  EXPECT_EQ(a("{tag}x"), a("{tag}y"));
}

}  // namespace
}  // namespace keep::core
