// The standard process_* metrics every Prometheus client library exports (CPU, resident memory,
// file descriptors, start time), read from /proc/self at scrape time.
#pragma once

#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace keep::telemetry {

class ProcessCollector : public prometheus::Collectable {
 public:
  // `proc_self` is the /proc/<pid> directory to read (tests point it at a fake tree).
  explicit ProcessCollector(std::string proc_self = "/proc/self");
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::string proc_self_;
};

}  // namespace keep::telemetry
