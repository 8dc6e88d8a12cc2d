#include "dataplane/shard/task_channel.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/shard/shard_group.h"

namespace keep::shard {
namespace {

std::unique_ptr<ShardGroup> MakeGroup(int shards) {
  std::vector<ShardOptions> options(shards);
  for (int i = 0; i < shards; ++i) {
    options[i].index = i;
    options[i].count = shards;
  }
  return std::make_unique<ShardGroup>(std::move(options), core::SlotFunction(),
                                      commands::ServerFacts{}, std::map<std::string, std::string>{},
                                      100);
}

TEST(TaskChannelTest, RunsOnTheShardAndCompletesOnTheControlThread) {
  boost::asio::io_context io;
  auto group = MakeGroup(2);
  group->tasks().Attach(io);
  group->Start();
  const auto control = std::this_thread::get_id();
  int completed = 0;
  for (int shard = 0; shard < 2; ++shard) {
    group->SubmitTo(
        shard,
        [shard](ShardTaskContext& ctx) {
          EXPECT_EQ(ctx.shard, shard);
          EXPECT_GT(ctx.now_ms, 0);
          ctx.store.Insert("k", "from-" + std::to_string(shard));
          ctx.slots[7].fencing_token = 10 + shard;
          return std::make_pair(std::this_thread::get_id(), ctx.store.Size());
        },
        [&, control](std::pair<std::thread::id, size_t> result) {
          EXPECT_NE(result.first, control);
          EXPECT_EQ(result.second, 1u);
          EXPECT_EQ(std::this_thread::get_id(), control);
          if (++completed == 2) io.stop();
        });
  }
  io.run_for(std::chrono::seconds(10));
  EXPECT_EQ(completed, 2);
  // Each shard kept its own state.
  std::vector<std::string> values(2);
  for (int shard = 0; shard < 2; ++shard) {
    group->SubmitTo(
        shard,
        [](ShardTaskContext& ctx) {
          return std::string(ctx.store.Value(ctx.store.Find("k"))) + "/" +
                 std::to_string(ctx.slots[7].fencing_token);
        },
        [&, shard](std::string value) {
          values[shard] = std::move(value);
          if (!values[0].empty() && !values[1].empty()) io.stop();
        });
  }
  io.restart();
  io.run_for(std::chrono::seconds(10));
  EXPECT_EQ(values[0], "from-0/10");
  EXPECT_EQ(values[1], "from-1/11");
  EXPECT_GT(group->tasks().tasks_run(0), 0u);
  EXPECT_GT(group->tasks().longest_task_ns(0), 0);
}

TEST(TaskChannelTest, MoreTasksThanTheRingHoldsRunInOrder) {
  boost::asio::io_context io;
  auto group = MakeGroup(2);
  group->tasks().Attach(io);
  group->Start();
  constexpr int kTasks = 3000;  // > kRingCapacity
  std::vector<std::vector<int>> seen(2);
  int done = 0;
  for (int i = 0; i < kTasks; ++i) {
    const int shard = i % 2;
    group->SubmitTo(
        shard, [i](ShardTaskContext&) { return i; },
        [&, shard](int value) {
          seen[shard].push_back(value);
          if (++done == kTasks) io.stop();
        });
  }
  EXPECT_GT(group->tasks().in_flight(0), TaskChannel::kRingCapacity);
  io.run_for(std::chrono::seconds(20));
  ASSERT_EQ(done, kTasks);
  for (int shard = 0; shard < 2; ++shard) {
    ASSERT_EQ(seen[shard].size(), static_cast<size_t>(kTasks / 2));
    for (size_t j = 0; j < seen[shard].size(); ++j) {
      EXPECT_EQ(seen[shard][j], static_cast<int>(2 * j) + shard);
    }
    EXPECT_EQ(group->tasks().in_flight(shard), 0u);
  }
}

TEST(TaskChannelTest, WakesAParkedShardAndChainsFromCompletions) {
  boost::asio::io_context io;
  auto group = MakeGroup(1);
  group->tasks().Attach(io);
  group->Start();
  // Let the shard park, then drive a chain where each completion submits the next task, as the
  // handoff engine does with its batches.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int steps = 0;
  std::function<void()> next = [&] {
    group->SubmitTo(
        0,
        [](ShardTaskContext& ctx) {
          ctx.store.Insert("n" + std::to_string(ctx.store.Size()), "v");
        },
        [&] {
          if (++steps < 100) {
            next();
          } else {
            io.stop();
          }
        });
  };
  boost::asio::post(io, next);
  io.run_for(std::chrono::seconds(10));
  EXPECT_EQ(steps, 100);
}

TEST(TaskChannelTest, DestroyingTheGroupWithTasksQueuedIsSafe) {
  boost::asio::io_context io;
  {
    auto group = MakeGroup(2);
    group->tasks().Attach(io);
    // Not started: the tasks stay queued and are dropped with the group.
    for (int i = 0; i < 10; ++i) {
      group->SubmitTo(
          i % 2, [](ShardTaskContext&) {}, [] { ADD_FAILURE() << "completed"; });
    }
  }
  io.run_for(std::chrono::milliseconds(50));  // the cancelled wait finds no channel
}

}  // namespace
}  // namespace keep::shard
