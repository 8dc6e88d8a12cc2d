#include "operator/metrics.h"

#include <prometheus/text_serializer.h>

#include <sstream>

namespace keep::op {

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      reconciles(prometheus::BuildCounter()
                     .Name("keep_operator_reconcile_total")
                     .Help("Reconciles run")
                     .Register(*registry_)
                     .Add({})),
      reconcile_errors(prometheus::BuildCounter()
                           .Name("keep_operator_reconcile_errors_total")
                           .Help("Reconciles that failed and were retried with backoff")
                           .Register(*registry_)
                           .Add({})),
      reconcile_seconds(
          prometheus::BuildHistogram()
              .Name("keep_operator_reconcile_duration_seconds")
              .Help("Time one reconcile took")
              .Register(*registry_)
              .Add({}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                               0.5, 1, 2.5, 5})),
      queue_depth(prometheus::BuildGauge()
                      .Name("keep_operator_workqueue_depth")
                      .Help("Keys waiting in the work queue")
                      .Register(*registry_)
                      .Add({})),
      leader(prometheus::BuildGauge()
                 .Name("keep_operator_leader")
                 .Help("1 when this instance holds the leader Lease")
                 .Register(*registry_)
                 .Add({})),
      relists(prometheus::BuildCounter()
                  .Name("keep_operator_informer_relists_total")
                  .Help("Informer lists (initial and after 410 Gone)")
                  .Register(*registry_)
                  .Add({})),
      member_calls_failed(prometheus::BuildCounter()
                              .Name("keep_operator_member_admin_failures_total")
                              .Help("Admin calls to members that got no answer or an error")
                              .Register(*registry_)
                              .Add({})) {
  cluster_members_ = &prometheus::BuildGauge()
                          .Name("keep_operator_cluster_members")
                          .Help("Members in a KeepCluster's member list")
                          .Register(*registry_);
  cluster_ready_ = &prometheus::BuildGauge()
                        .Name("keep_operator_cluster_ready_members")
                        .Help("Ready members of a KeepCluster")
                        .Register(*registry_);
  cluster_degraded_ = &prometheus::BuildGauge()
                           .Name("keep_operator_cluster_degraded")
                           .Help("1 when a KeepCluster is Degraded")
                           .Register(*registry_);
}

void Metrics::SetCluster(const std::string& ns, const std::string& name, int members, int ready,
                         bool degraded) {
  std::map<std::string, std::string> labels = {{"namespace", ns}, {"cluster", name}};
  cluster_members_->Add(labels).Set(members);
  cluster_ready_->Add(labels).Set(ready);
  cluster_degraded_->Add(labels).Set(degraded ? 1 : 0);
}

std::string Metrics::Serialize() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace keep::op
