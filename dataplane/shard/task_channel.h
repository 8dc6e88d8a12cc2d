// Control thread → shard tasks (design §2.1; Seastar's `submit_to(shard, fn)` as one typed
// operation). The control thread (the one running the Boost.Asio io_context) submits a function
// to a shard; the shard runs it in its loop turn, with its store and slot table, and the result
// comes back to the control thread as a completion handler run by the io_context.
//
// Threads and ordering: Submit* and every completion run on the control thread; it is the only
// producer of each shard's inbound ring and the only consumer of its completion ring, so both are
// SPSC and the shard side takes no lock and makes no allocation. Tasks of one shard run in
// submission order. A shard runs at most kTasksPerTurn tasks per turn and each task must bound its
// own work (a byte or entry budget), so a task stream never stalls the shard's connections. A
// parked shard is woken through its eventfd, the way the rings between shards do it; completions
// wake the io_context through an eventfd of their own, once per turn that completed something.
//
// More tasks than a ring holds wait in a control-side queue and enter as completions free room.
// Tasks still queued when the channel is destroyed are dropped without their completion.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "dataplane/core/clock.h"
#include "dataplane/core/slot_state.h"
#include "dataplane/core/store.h"
#include "dataplane/shard/spsc_ring.h"

namespace keep::shard {

// What a task may touch: the state of the shard it runs on.
struct ShardTaskContext {
  core::Store& store;
  core::SlotTable& slots;
  int shard = 0;
  int64_t now_ms = 0;  // a fresh reading of the shard clock when the task starts
  const core::Clock& clock;
};

class ShardTask {
 public:
  virtual ~ShardTask() = default;
  virtual void Run(ShardTaskContext& context) = 0;  // on the shard
  virtual void Complete() = 0;                      // on the control thread, after Run
};

class TaskChannel {
 public:
  static constexpr size_t kRingCapacity = 256;
  static constexpr int kTasksPerTurn = 4;

  // `wake(shard)` wakes a parked shard (Shard::Wake).
  TaskChannel(int shards, std::function<void(int)> wake);
  ~TaskChannel();
  TaskChannel(const TaskChannel&) = delete;
  TaskChannel& operator=(const TaskChannel&) = delete;

  // Binds completions to `io` (the control thread's); once, before the first Submit.
  void Attach(boost::asio::io_context& io);
  bool attached() const { return control_ != nullptr; }

  // Control thread: runs fn(ShardTaskContext&) on `shard`, then done(result) on the control
  // thread (done() when fn returns void).
  template <class Fn, class Done>
  void SubmitTo(int shard, Fn fn, Done done);
  void Submit(int shard, std::unique_ptr<ShardTask> task);

  // Shard side.
  bool HasWork(int shard) const { return !shards_[shard]->inbound.Empty(); }
  // Runs up to kTasksPerTurn tasks; returns how many ran.
  int RunSome(int shard, core::Store& store, core::SlotTable& slots, const core::Clock& clock);

  // The longest single task run on `shard` so far (any thread; for metrics and benchmarks).
  int64_t longest_task_ns(int shard) const {
    return shards_[shard]->longest_ns.load(std::memory_order_relaxed);
  }
  uint64_t tasks_run(int shard) const {
    return shards_[shard]->tasks_run.load(std::memory_order_relaxed);
  }
  // Tasks submitted and not completed yet (control thread).
  size_t in_flight(int shard) const {
    return shards_[shard]->in_flight + shards_[shard]->waiting.size();
  }

 private:
  struct PerShard {
    SpscRing<ShardTask> inbound{kRingCapacity};
    SpscRing<ShardTask> completed{kRingCapacity};
    // Control-thread only.
    std::deque<std::unique_ptr<ShardTask>> waiting;
    size_t in_flight = 0;  // in `inbound`, running, or in `completed`
    // Shard-written statistics.
    std::atomic<int64_t> longest_ns{0};
    std::atomic<uint64_t> tasks_run{0};
  };
  struct Control;

  void Feed(int shard);
  void DrainCompletions();

  std::vector<std::unique_ptr<PerShard>> shards_;
  std::function<void(int)> wake_;
  int event_fd_ = -1;
  std::shared_ptr<Control> control_;
};

namespace internal {

template <class Fn, class Done, class R>
class FnTask final : public ShardTask {
 public:
  FnTask(Fn fn, Done done) : fn_(std::move(fn)), done_(std::move(done)) {}
  void Run(ShardTaskContext& context) override { result_.emplace(fn_(context)); }
  void Complete() override { done_(std::move(*result_)); }

 private:
  Fn fn_;
  Done done_;
  std::optional<R> result_;
};

template <class Fn, class Done>
class FnTask<Fn, Done, void> final : public ShardTask {
 public:
  FnTask(Fn fn, Done done) : fn_(std::move(fn)), done_(std::move(done)) {}
  void Run(ShardTaskContext& context) override { fn_(context); }
  void Complete() override { done_(); }

 private:
  Fn fn_;
  Done done_;
};

}  // namespace internal

template <class Fn, class Done>
void TaskChannel::SubmitTo(int shard, Fn fn, Done done) {
  using R = std::invoke_result_t<Fn&, ShardTaskContext&>;
  Submit(shard, std::make_unique<internal::FnTask<Fn, Done, R>>(std::move(fn), std::move(done)));
}

}  // namespace keep::shard
