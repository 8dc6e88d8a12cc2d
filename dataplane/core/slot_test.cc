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

// HashTag looks for '{' a word at a time in short keys: a brace at any offset of any length, and
// bytes that differ from '{' by one bit or borrow into the next lane, must be told apart.
TEST(SlotTest, HashTagFindsTheBraceAtEveryOffset) {
  auto reference = [](std::string_view key) {
    size_t open = key.find('{');
    if (open == std::string_view::npos) return key;
    size_t close = key.find('}', open + 1);
    if (close == std::string_view::npos || close == open + 1) return key;
    return key.substr(open + 1, close - open - 1);
  };
  for (char filler : {'a', 'z', ';', 'k', '\xfb', '\x7c', '\0', '\x80'}) {
    for (size_t length = 0; length <= 40; ++length) {
      const std::string plain(length, filler);
      EXPECT_EQ(HashTag(plain), plain);
      for (size_t open = 0; open < length; ++open) {
        std::string key = plain;
        key[open] = '{';
        EXPECT_EQ(HashTag(key), reference(key)) << length << " " << open;
        for (size_t close = open + 1; close < length; ++close) {
          std::string tagged = key;
          tagged[close] = '}';
          EXPECT_EQ(HashTag(tagged), reference(tagged)) << length << " " << open << " " << close;
        }
      }
    }
  }
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
