#include "operator/kube/work_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace keep::kube {
namespace {

using namespace std::chrono_literals;

struct FakeClock {
  WorkQueue::Clock::time_point now = WorkQueue::Clock::now();
  std::function<WorkQueue::Clock::time_point()> fn() {
    return [this] { return now; };
  }
};

TEST(WorkQueue, DeduplicatesQueuedKeys) {
  WorkQueue q;
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.Get(10ms), "a");
  EXPECT_EQ(q.Get(10ms), "b");
  EXPECT_EQ(q.Get(10ms), std::nullopt);
}

TEST(WorkQueue, KeyAddedWhileProcessingComesBackAfterDone) {
  WorkQueue q;
  q.Add("a");
  auto key = q.Get(10ms);
  ASSERT_EQ(key, "a");
  q.Add("a");  // changed while a worker holds it: must not run twice at once
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.Get(10ms), std::nullopt);
  q.Done("a");
  EXPECT_EQ(q.Get(10ms), "a");
}

TEST(WorkQueue, PerKeyBackoffDoublesToTheCapAndForgetResets) {
  FakeClock clock;
  WorkQueue::Options o;
  o.base_delay = 5ms;
  o.max_delay = 100ms;
  o.burst = 1000;
  o.now = clock.fn();
  WorkQueue q(o);
  EXPECT_EQ(q.NextDelay("k"), 5ms);
  EXPECT_EQ(q.NextDelay("k"), 10ms);
  EXPECT_EQ(q.NextDelay("k"), 20ms);
  EXPECT_EQ(q.NextDelay("other"), 5ms);
  for (int i = 0; i < 10; ++i) q.NextDelay("k");
  EXPECT_EQ(q.NextDelay("k"), 100ms);
  EXPECT_EQ(q.Failures("k"), 14);
  q.Forget("k");
  EXPECT_EQ(q.Failures("k"), 0);
  EXPECT_EQ(q.NextDelay("k"), 5ms);
}

TEST(WorkQueue, SharedBucketLimitsRetriesOverall) {
  FakeClock clock;
  WorkQueue::Options o;
  o.base_delay = 1ms;
  o.qps = 10;
  o.burst = 2;
  o.now = clock.fn();
  WorkQueue q(o);
  EXPECT_EQ(q.NextDelay("a"), 1ms);
  EXPECT_EQ(q.NextDelay("b"), 1ms);
  // Bucket empty: the third retry waits a token (100 ms at 10 qps), the fourth two.
  EXPECT_EQ(q.NextDelay("c"), 100ms);
  EXPECT_EQ(q.NextDelay("d"), 200ms);
  clock.now += 1s;  // refills (capped at the burst)
  EXPECT_EQ(q.NextDelay("e"), 1ms);
}

TEST(WorkQueue, AddAfterDeliversWhenDueAndEarliestWins) {
  FakeClock clock;
  WorkQueue::Options o;
  o.now = clock.fn();
  WorkQueue q(o);
  q.AddAfter("a", 10s);
  q.AddAfter("a", 2s);
  EXPECT_EQ(q.Get(60ms), std::nullopt);
  clock.now += 2s;
  EXPECT_EQ(q.Get(200ms), "a");
  q.Done("a");
  clock.now += 10s;  // the later duplicate was dropped
  EXPECT_EQ(q.Get(60ms), std::nullopt);
}

TEST(WorkQueue, ShutDownWakesWaiters) {
  WorkQueue q;
  std::thread t([&] { EXPECT_EQ(q.Get(10s), std::nullopt); });
  std::this_thread::sleep_for(20ms);
  q.ShutDown();
  t.join();
  q.Add("x");
  EXPECT_EQ(q.Len(), 0u);
}

}  // namespace
}  // namespace keep::kube
