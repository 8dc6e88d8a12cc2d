// How many shard threads this process may run and whether they may be pinned (design §2.1):
// the smaller of the allowed CPUs (sched_getaffinity) and the cgroup v2 cpu.max quota.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace keep::server {

struct CpuBudget {
  std::vector<int> allowed_cpus;     // from the affinity mask
  std::optional<double> quota_cpus;  // cpu.max quota / period; nullopt when unlimited or unknown
  bool cgroup_v1 = false;            // the quota cannot be read: --shards should be given
  int online_cpus = 0;               // CPUs of the machine
  int budget = 1;                    // min(allowed, floor(quota)), at least 1
  // Every shard can have a CPU of its own that nobody else is scheduled on: the affinity mask is
  // a strict subset of the machine (as the kubelet's static CPU manager grants) and no quota
  // below it.
  bool exclusive = false;
};

// `cgroup_root` is normally /sys/fs/cgroup and `proc_self_cgroup` /proc/self/cgroup; tests pass
// a fake tree.
CpuBudget DetectCpuBudget(const std::string& cgroup_root = "/sys/fs/cgroup",
                          const std::string& proc_self_cgroup = "/proc/self/cgroup");

// Parses a cgroup v2 cpu.max line ("max 100000" or "250000 100000") into CPUs.
std::optional<double> ParseCpuMax(const std::string& line);

// Budget arithmetic, separate from the system reads so it can be tested.
CpuBudget ComputeBudget(std::vector<int> allowed_cpus, std::optional<double> quota_cpus,
                        bool cgroup_v1, int online_cpus);

}  // namespace keep::server
