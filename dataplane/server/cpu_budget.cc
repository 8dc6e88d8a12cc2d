#include "dataplane/server/cpu_budget.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace keep::server {

std::optional<double> ParseCpuMax(const std::string& line) {
  std::istringstream in(line);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || period <= 0) return std::nullopt;
  if (quota == "max") return std::nullopt;
  try {
    double value = std::stod(quota);
    if (value <= 0) return std::nullopt;
    return value / period;
  } catch (...) {
    return std::nullopt;
  }
}

CpuBudget ComputeBudget(std::vector<int> allowed_cpus, std::optional<double> quota_cpus,
                        bool cgroup_v1, int online_cpus) {
  CpuBudget budget;
  budget.allowed_cpus = std::move(allowed_cpus);
  budget.quota_cpus = quota_cpus;
  budget.cgroup_v1 = cgroup_v1;
  budget.online_cpus = online_cpus;
  int allowed = std::max<int>(1, static_cast<int>(budget.allowed_cpus.size()));
  int limit = allowed;
  if (quota_cpus) limit = std::min(limit, static_cast<int>(std::floor(*quota_cpus + 1e-9)));
  budget.budget = std::max(1, limit);
  bool strict_subset = static_cast<int>(budget.allowed_cpus.size()) < online_cpus;
  bool quota_covers = !quota_cpus || std::floor(*quota_cpus + 1e-9) >= allowed;
  budget.exclusive = strict_subset && quota_covers;
  return budget;
}

CpuBudget DetectCpuBudget(const std::string& cgroup_root, const std::string& proc_self_cgroup) {
  std::vector<int> allowed;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) allowed.push_back(cpu);
    }
  }
  int online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));

  bool v1 = true;
  std::optional<double> quota;
  std::ifstream cgroup_file(proc_self_cgroup);
  std::string line;
  while (std::getline(cgroup_file, line)) {
    if (!line.starts_with("0::")) continue;
    v1 = false;
    // The effective quota is the smallest along the path to the root.
    std::string path = line.substr(3);
    while (true) {
      std::ifstream max_file(cgroup_root + (path == "/" ? "" : path) + "/cpu.max");
      std::string max_line;
      if (max_file && std::getline(max_file, max_line)) {
        if (auto cpus = ParseCpuMax(max_line)) quota = quota ? std::min(*quota, *cpus) : *cpus;
      }
      if (path == "/" || path.empty()) break;
      size_t slash = path.rfind('/');
      path = slash == 0 ? "/" : path.substr(0, slash);
    }
  }
  return ComputeBudget(std::move(allowed), quota, v1, online);
}

}  // namespace keep::server
