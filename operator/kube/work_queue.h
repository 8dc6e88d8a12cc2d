// A rate-limited work queue of keys, as client-go's: a key is queued at most once, a key being
// processed that is added again is queued once after Done(), failures back off per key
// (exponential, base doubling up to a cap) and all retries share a token bucket (qps, burst).
// The clock is injectable so tests do not sleep.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace keep::kube {

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using Duration = std::chrono::nanoseconds;
  struct Options {
    Duration base_delay = std::chrono::milliseconds(5);
    Duration max_delay = std::chrono::seconds(1000);
    double qps = 10;
    int burst = 100;
    std::function<Clock::time_point()> now = [] { return Clock::now(); };
  };

  WorkQueue() : WorkQueue(Options{}) {}
  explicit WorkQueue(Options options);

  void Add(const std::string& key);
  void AddAfter(const std::string& key, Duration delay);
  // Re-queues after the key's backoff (and the shared bucket's) and counts a failure.
  void AddRateLimited(const std::string& key);
  // Clears the key's failure count (call after a success).
  void Forget(const std::string& key);
  int Failures(const std::string& key) const;
  // The delay AddRateLimited would use now (and consumes it); exposed for tests.
  Duration NextDelay(const std::string& key);

  // Blocks until a key is ready (or `wait` passes / shutdown). The caller must call Done().
  std::optional<std::string> Get(Duration wait = std::chrono::hours(24));
  void Done(const std::string& key);

  void ShutDown();
  size_t Len() const;

 private:
  void PromoteDueLocked();
  void AddLocked(const std::string& key);

  Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> dirty_;
  std::set<std::string> processing_;
  std::multimap<Clock::time_point, std::string> waiting_;
  std::map<std::string, int> failures_;
  double tokens_;
  Clock::time_point last_refill_;
  Clock::time_point bucket_next_;
  bool shutdown_ = false;
};

}  // namespace keep::kube
