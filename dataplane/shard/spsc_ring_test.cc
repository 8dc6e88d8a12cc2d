#include "dataplane/shard/spsc_ring.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace keep::shard {
namespace {

TEST(SpscRingTest, FillsAndDrainsInOrder) {
  SpscRing<int> ring(4);
  int values[5] = {0, 1, 2, 3, 4};
  EXPECT_EQ(ring.Pop(), nullptr);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(ring.Push(&values[i]));
  EXPECT_FALSE(ring.Push(&values[4]));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ring.Pop(), &values[i]);
  EXPECT_EQ(ring.Pop(), nullptr);
  EXPECT_TRUE(ring.Empty());
}

TEST(SpscRingTest, WrapsAroundManyTimes) {
  SpscRing<int> ring(8);
  int value = 7;
  for (int round = 0; round < 1000; ++round) {
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(ring.Push(&value));
    for (int i = 0; i < 5; ++i) ASSERT_EQ(ring.Pop(), &value);
  }
}

TEST(SpscRingTest, TwoThreadsTransferEverythingInOrder) {
  constexpr int kCount = 200000;
  SpscRing<int> ring(64);
  std::vector<int> values(kCount);
  for (int i = 0; i < kCount; ++i) values[i] = i;
  std::thread producer([&] {
    for (int i = 0; i < kCount; ++i) {
      while (!ring.Push(&values[i])) std::this_thread::yield();
    }
  });
  int expected = 0;
  while (expected < kCount) {
    int* item = ring.Pop();
    if (item == nullptr) {
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(*item, expected);
    ++expected;
  }
  producer.join();
  EXPECT_TRUE(ring.Empty());
}

}  // namespace
}  // namespace keep::shard
