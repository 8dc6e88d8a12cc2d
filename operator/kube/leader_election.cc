#include "operator/kube/leader_election.h"

#include <ctime>
#include <thread>

#include "operator/kube/client.h"

namespace keep::kube {

std::string NowRfc3339Micro() {
  auto now = std::chrono::system_clock::now();
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(us / 1000000);
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[64];
  size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(buf + n, sizeof(buf) - n, ".%06lldZ", static_cast<long long>(us % 1000000));
  return buf;
}

std::string NowRfc3339() {
  time_t secs = time(nullptr);
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

bool LeaderElector::TryAcquireOrRenew() {
  try {
    return TryAcquireOrRenewOnce();
  } catch (const std::exception&) {
    return false;  // a Lease of an unexpected shape counts as a failed attempt
  }
}

bool LeaderElector::TryAcquireOrRenewOnce() {
  std::string path = ResourcePath("coordination.k8s.io/v1", "leases", options_.lease_namespace,
                                  options_.lease_name);
  std::string now = NowRfc3339Micro();
  Response got = client_.Get(path);
  if (got.status == 404) {
    Json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", options_.lease_name}, {"namespace", options_.lease_namespace}}},
        {"spec",
         {{"holderIdentity", options_.identity},
          {"leaseDurationSeconds", options_.lease_duration.count()},
          {"acquireTime", now},
          {"renewTime", now},
          {"leaseTransitions", 0}}}};
    return client_
        .Create(ResourcePath("coordination.k8s.io/v1", "leases", options_.lease_namespace), lease)
        .ok();
  }
  if (!got.ok()) return false;
  Json lease = got.body;
  Json& spec = lease["spec"];
  std::string holder = spec.value("holderIdentity", "");
  std::string renew = spec.value("renewTime", "");
  std::string rv = lease["metadata"].value("resourceVersion", "");
  auto local_now = std::chrono::steady_clock::now();
  // Expiry is judged by when *we* saw the record change, never by the holder's clock.
  if (holder != observed_holder_ || renew != observed_renew_ || rv != observed_rv_) {
    observed_holder_ = holder;
    observed_renew_ = renew;
    observed_rv_ = rv;
    observed_at_ = local_now;
  }
  int duration =
      spec.value("leaseDurationSeconds", static_cast<int>(options_.lease_duration.count()));
  bool expired = local_now - observed_at_ >= std::chrono::seconds(duration);
  if (!holder.empty() && holder != options_.identity && !expired) return false;
  if (holder != options_.identity) {
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
    spec["acquireTime"] = now;
  }
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = options_.lease_duration.count();
  spec["renewTime"] = now;
  // PUT carries metadata.resourceVersion: a concurrent writer makes this a 409.
  Response put = client_.Request("PUT", path, lease);
  if (put.ok()) {
    observed_holder_ = options_.identity;
    observed_renew_ = now;
    observed_rv_ = put.body["metadata"].value("resourceVersion", "");
    observed_at_ = local_now;
  }
  return put.ok();
}

bool LeaderElector::Acquire(const std::atomic<bool>& stop) {
  while (!stop) {
    if (TryAcquireOrRenew()) return true;
    std::this_thread::sleep_for(options_.retry_period);
  }
  return false;
}

void LeaderElector::Hold(const std::atomic<bool>& stop) {
  auto last_renew = std::chrono::steady_clock::now();
  while (!stop) {
    std::this_thread::sleep_for(options_.retry_period);
    if (TryAcquireOrRenew()) {
      last_renew = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - last_renew > options_.renew_deadline) {
      return;  // lost: the caller stops working
    }
  }
}

}  // namespace keep::kube
