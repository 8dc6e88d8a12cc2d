// keep-operator's own metrics (prometheus-cpp model, text format on /metrics).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

namespace keep::op {

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  std::string Serialize() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;  // first: the references below live in it

 public:
  prometheus::Counter& reconciles;
  prometheus::Counter& reconcile_errors;
  prometheus::Histogram& reconcile_seconds;
  prometheus::Gauge& queue_depth;
  prometheus::Gauge& leader;
  prometheus::Counter& relists;
  prometheus::Counter& member_calls_failed;
  void SetCluster(const std::string& ns, const std::string& name, int members, int ready,
                  bool degraded);

 private:
  prometheus::Family<prometheus::Gauge>* cluster_members_;
  prometheus::Family<prometheus::Gauge>* cluster_ready_;
  prometheus::Family<prometheus::Gauge>* cluster_degraded_;
};

}  // namespace keep::op
