#include "telemetry/process_collector.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace keep::telemetry {

namespace {

prometheus::MetricFamily Gauge(std::string name, std::string help, double value,
                               prometheus::MetricType type = prometheus::MetricType::Gauge) {
  prometheus::MetricFamily family{std::move(name), std::move(help), type, {}};
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
  return family;
}

double BootTimeSeconds() {
  std::ifstream stat("/proc/stat");
  std::string line;
  while (std::getline(stat, line)) {
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  }
  return 0;
}

}  // namespace

ProcessCollector::ProcessCollector(std::string proc_self) : proc_self_(std::move(proc_self)) {}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  std::ifstream stat_file(proc_self_ + "/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  // Fields after the command name, which may hold spaces and parentheses: split after the last ')'.
  size_t close = stat.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(stat.substr(close + 2));
    std::vector<std::string> f;
    std::string field;
    while (fields >> field) f.push_back(field);
    // f[0] is field 3 (state): utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
    if (f.size() > 21) {
      double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
      double cpu = (std::stod(f[11]) + std::stod(f[12])) / ticks;
      out.push_back(Gauge("process_cpu_seconds_total",
                          "Total user and system CPU time spent in seconds.", cpu,
                          prometheus::MetricType::Counter));
      out.push_back(Gauge("process_start_time_seconds",
                          "Start time of the process since unix epoch in seconds.",
                          BootTimeSeconds() + std::stod(f[19]) / ticks));
      out.push_back(
          Gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", std::stod(f[20])));
      out.push_back(Gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                          std::stod(f[21]) * static_cast<double>(sysconf(_SC_PAGESIZE))));
    }
  }
  size_t fds = 0;
  if (DIR* dir = opendir((proc_self_ + "/fd").c_str())) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++fds;
    }
    closedir(dir);
  }
  out.push_back(
      Gauge("process_open_fds", "Number of open file descriptors.", static_cast<double>(fds)));
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out.push_back(Gauge("process_max_fds", "Maximum number of open file descriptors.",
                        static_cast<double>(limit.rlim_cur)));
  }
  return out;
}

}  // namespace keep::telemetry
