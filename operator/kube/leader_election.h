// Leader election on a coordination.k8s.io/v1 Lease: acquire when free or when the holder has
// not renewed for the lease duration as measured locally, renew with a resourceVersion
// precondition, and report loss when a renewal does not succeed within the renew deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

namespace keep::kube {

class Client;

class LeaderElector {
 public:
  struct Options {
    std::string lease_namespace;
    std::string lease_name = "keep-operator";
    std::string identity;
    std::chrono::seconds lease_duration{15};
    std::chrono::seconds renew_deadline{10};
    std::chrono::seconds retry_period{2};
  };
  LeaderElector(Client& client, Options options) : client_(client), options_(std::move(options)) {}

  // Blocks until leadership is acquired (true) or `stop` (false).
  bool Acquire(const std::atomic<bool>& stop);
  // Renews until leadership is lost (returns) or `stop`.
  void Hold(const std::atomic<bool>& stop);

 private:
  bool TryAcquireOrRenew();
  bool TryAcquireOrRenewOnce();

  Client& client_;
  Options options_;
  std::string observed_rv_;
  std::string observed_holder_;
  std::string observed_renew_;
  std::chrono::steady_clock::time_point observed_at_{};
};

std::string NowRfc3339Micro();
std::string NowRfc3339();

}  // namespace keep::kube
