#include "dataplane/shard/connection.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <vector>

namespace keep::shard {
namespace {

std::vector<PendingReply*> Contents(const PendingQueue& queue) {
  std::vector<PendingReply*> out;
  queue.ForEach([&](PendingReply* slot) { out.push_back(slot); });
  return out;
}

TEST(PendingQueueTest, StartsEmptyAndAllocatesNothing) {
  PendingQueue queue;
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.size(), 0u);
  EXPECT_TRUE(Contents(queue).empty());
  queue.clear();
  EXPECT_TRUE(queue.empty());
}

TEST(PendingQueueTest, KeepsOrderAcrossGrowthAndWrapAround) {
  std::vector<PendingReply> replies(5000);
  PendingQueue queue;
  std::deque<PendingReply*> model;
  std::mt19937 random(7);
  size_t next = 0;
  for (int step = 0; step < 20000; ++step) {
    // Pushes outnumber pops early on (growth with a wrapped head), then the queue drains.
    const bool push = step < 15000 ? random() % 3 != 0 : random() % 4 == 0;
    if (push) {
      PendingReply* slot = &replies[next++ % replies.size()];
      queue.push_back(slot);
      model.push_back(slot);
    } else if (!model.empty()) {
      ASSERT_EQ(queue.front(), model.front());
      queue.pop_front();
      model.pop_front();
    }
    ASSERT_EQ(queue.size(), model.size());
    ASSERT_EQ(queue.empty(), model.empty());
    if (step % 997 == 0) {
      ASSERT_EQ(Contents(queue), std::vector<PendingReply*>(model.begin(), model.end()));
    }
  }
  queue.clear();
  EXPECT_TRUE(queue.empty());
  queue.push_back(&replies[1]);
  EXPECT_EQ(queue.front(), &replies[1]);
  EXPECT_EQ(queue.size(), 1u);
}

}  // namespace
}  // namespace keep::shard
