// One reconcile of a KeepCluster: observe (API server + members' admin endpoints), plan
// (plan.h), act (server-side apply of the owned objects, admin calls, pod deletes), report
// (status subresource, Events). Every action is idempotent; state lives in the API server.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "operator/cluster_spec.h"
#include "operator/kube/client.h"
#include "operator/kube/events.h"
#include "operator/member_admin.h"
#include "operator/metrics.h"
#include "operator/plan.h"

namespace keep::op {

class Reconciler {
 public:
  struct Result {
    bool error = false;
    std::string message;
    std::chrono::milliseconds requeue_after{0};  // 0: wait for the next change
  };
  Reconciler(kube::Client& client, MemberAdmin& admin, kube::EventRecorder& events,
             Metrics& metrics)
      : client_(client), admin_(admin), events_(events), metrics_(metrics) {}

  Result Reconcile(const std::string& ns, const std::string& name);

  // Pure: the status object for an observation and plan (conditions keep their
  // lastTransitionTime from `old_status` while unchanged).
  static Json BuildStatus(const Observation& obs, const Plan& plan, const Json& old_status,
                          const std::string& extra_degraded, const std::string& now);

 private:
  // The peer secret (creating the generated Secret when absent), or an error message.
  bool EnsureSecrets(const ClusterSpec& spec, std::string* peer_secret, std::string* error);
  Observation Observe(const ClusterSpec& spec, const Json& kc);
  bool ApplyObject(const Json& object, std::string* error);
  bool DeleteIfPresent(const std::string& path);
  bool MonitoringCrdsPresent();
  void SyncMemberLists(const Observation& obs, const Plan& plan, const std::string& token);

  kube::Client& client_;
  MemberAdmin& admin_;
  kube::EventRecorder& events_;
  Metrics& metrics_;
  std::mutex discovery_mu_;
  std::chrono::steady_clock::time_point discovery_at_{};
  bool monitoring_present_ = false;
};

// The REST path of an object (from its apiVersion, kind, namespace and name).
std::string ObjectPath(const Json& object);

}  // namespace keep::op
