#include "dataplane/shard/task_channel.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdio>
#include <cstdlib>

namespace keep::shard {

// The io_context side. Shared with the pending wait handler, so a handler that runs after the
// channel is gone finds `channel` null instead of a dangling pointer.
struct TaskChannel::Control {
  Control(boost::asio::io_context& io, int fd) : descriptor(io, fd) {}
  boost::asio::posix::stream_descriptor descriptor;
  TaskChannel* channel = nullptr;

  static void Arm(const std::shared_ptr<Control>& self) {
    self->descriptor.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                                [self](const boost::system::error_code& error) {
                                  if (error || self->channel == nullptr) return;
                                  uint64_t value;
                                  ssize_t ignored =
                                      read(self->descriptor.native_handle(), &value, sizeof(value));
                                  (void)ignored;
                                  self->channel->DrainCompletions();
                                  if (self->channel != nullptr) Arm(self);
                                });
  }
};

TaskChannel::TaskChannel(int shards, std::function<void(int)> wake) : wake_(std::move(wake)) {
  for (int i = 0; i < shards; ++i) shards_.push_back(std::make_unique<PerShard>());
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) {
    std::perror("keep: eventfd for the task channel");
    std::abort();
  }
}

TaskChannel::~TaskChannel() {
  if (control_ != nullptr) {
    control_->channel = nullptr;
    boost::system::error_code ignored;
    control_->descriptor.cancel(ignored);  // the descriptor closes event_fd_ when released
  } else {
    close(event_fd_);
  }
  for (auto& per : shards_) {
    while (ShardTask* task = per->inbound.Pop()) delete task;
    while (ShardTask* task = per->completed.Pop()) delete task;
  }
}

void TaskChannel::Attach(boost::asio::io_context& io) {
  control_ = std::make_shared<Control>(io, event_fd_);
  control_->channel = this;
  Control::Arm(control_);
}

void TaskChannel::Submit(int shard, std::unique_ptr<ShardTask> task) {
  if (control_ == nullptr) {
    std::fprintf(stderr, "keep: TaskChannel::Submit before Attach\n");
    std::abort();
  }
  shards_[shard]->waiting.push_back(std::move(task));
  Feed(shard);
}

void TaskChannel::Feed(int shard) {
  PerShard& per = *shards_[shard];
  bool pushed = false;
  // A task counts against the capacity from submission to completion, so the shard's completion
  // ring can never be full.
  while (!per.waiting.empty() && per.in_flight < kRingCapacity) {
    if (!per.inbound.Push(per.waiting.front().get())) break;
    per.waiting.front().release();
    per.waiting.pop_front();
    ++per.in_flight;
    pushed = true;
  }
  if (pushed) {
    // Pairs with the shard's parked flag (as Shard::FlushOutbound does for the rings).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    wake_(shard);
  }
}

int TaskChannel::RunSome(int shard, core::Store& store, core::SlotTable& slots,
                         const core::Clock& clock) {
  PerShard& per = *shards_[shard];
  int ran = 0;
  while (ran < kTasksPerTurn) {
    ShardTask* task = per.inbound.Pop();
    if (task == nullptr) break;
    const int64_t start = core::MonotonicNanos();
    ShardTaskContext context{store, slots, shard, clock.NowMillis(), clock};
    task->Run(context);
    const int64_t took = core::MonotonicNanos() - start;
    if (took > per.longest_ns.load(std::memory_order_relaxed)) {
      per.longest_ns.store(took, std::memory_order_relaxed);
    }
    per.tasks_run.fetch_add(1, std::memory_order_relaxed);
    per.completed.Push(task);  // never full: see Feed
    ++ran;
  }
  if (ran > 0) {
    uint64_t one = 1;
    ssize_t ignored = write(event_fd_, &one, sizeof(one));
    (void)ignored;
  }
  return ran;
}

void TaskChannel::DrainCompletions() {
  for (size_t shard = 0; shard < shards_.size(); ++shard) {
    PerShard& per = *shards_[shard];
    while (ShardTask* task = per.completed.Pop()) {
      std::unique_ptr<ShardTask> owned(task);
      --per.in_flight;
      owned->Complete();
    }
    Feed(static_cast<int>(shard));
  }
}

}  // namespace keep::shard
