#include "operator/kube/work_queue.h"

#include <algorithm>
#include <cmath>

namespace keep::kube {

WorkQueue::WorkQueue(Options options) : options_(std::move(options)) {
  tokens_ = options_.burst;
  last_refill_ = options_.now();
  bucket_next_ = last_refill_;
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutdown_ || dirty_.count(key)) return;
  dirty_.insert(key);
  if (processing_.count(key)) return;  // queued again when Done() is called
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, Duration delay) {
  std::lock_guard lock(mu_);
  if (shutdown_) return;
  if (delay <= Duration::zero()) {
    AddLocked(key);
    return;
  }
  // An earlier deadline for the same key wins; a later one is redundant.
  auto due = options_.now() + delay;
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->second == key) {
      if (it->first <= due) return;
      waiting_.erase(it);
      break;
    }
  }
  waiting_.emplace(due, key);
  cv_.notify_one();
}

WorkQueue::Duration WorkQueue::NextDelay(const std::string& key) {
  std::lock_guard lock(mu_);
  int n = failures_[key]++;
  double per_item =
      std::chrono::duration<double>(options_.base_delay).count() * std::pow(2.0, std::min(n, 62));
  double cap = std::chrono::duration<double>(options_.max_delay).count();
  Duration item_delay =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(std::min(per_item, cap)));
  // Token bucket shared by all keys: a token per retry, refilled at qps.
  auto now = options_.now();
  double elapsed = std::chrono::duration<double>(now - last_refill_).count();
  tokens_ = std::min<double>(options_.burst, tokens_ + elapsed * options_.qps);
  last_refill_ = now;
  Duration bucket_delay = Duration::zero();
  tokens_ -= 1;
  if (tokens_ < 0) {
    bucket_delay = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double>(-tokens_ / options_.qps));
  }
  return std::max(item_delay, bucket_delay);
}

void WorkQueue::AddRateLimited(const std::string& key) { AddAfter(key, NextDelay(key)); }

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int WorkQueue::Failures(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDueLocked() {
  auto now = options_.now();
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    std::string key = waiting_.begin()->second;
    waiting_.erase(waiting_.begin());
    AddLocked(key);
  }
}

std::optional<std::string> WorkQueue::Get(Duration wait) {
  std::unique_lock lock(mu_);
  auto deadline = Clock::now() + wait;
  while (true) {
    PromoteDueLocked();
    if (!queue_.empty()) break;
    if (shutdown_) return std::nullopt;
    auto until = deadline;
    if (!waiting_.empty()) {
      // The injected clock may differ from the real one; poll at most every 50 ms.
      until = std::min(until, Clock::now() + std::chrono::milliseconds(50));
    }
    if (cv_.wait_until(lock, until) == std::cv_status::timeout && Clock::now() >= deadline) {
      PromoteDueLocked();
      if (queue_.empty()) return std::nullopt;
      break;
    }
  }
  std::string key = queue_.front();
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key)) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  std::lock_guard lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

size_t WorkQueue::Len() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

}  // namespace keep::kube
