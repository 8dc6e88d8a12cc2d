// IRQ affinity for Keep's exclusive CPUs (design §5, the ScyllaDB NodeConfig pattern): finds
// each Keep container's cpuset in the host's cgroup tree and points the NIC receive-queue
// interrupts at those CPUs (one queue per CPU; the other queues away from them) or moves them
// all away, by writing /proc/irq/N/smp_affinity_list. The affinity found before the first
// change is saved in a state file and written back when no Keep container is left.
// Every path is under a given /proc and /sys root, so tests run on a fake tree.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace keep::tuner {

std::optional<std::set<int>> ParseCpuList(const std::string& text);  // "0-3,8" -> {0,1,2,3,8}
std::string FormatCpuList(const std::set<int>& cpus);                // {0,1,2,3,8} -> "0-3,8"

struct Roots {
  std::string proc = "/proc";
  std::string sys = "/sys";
  std::string state_dir = "/var/lib/keep-node-tuner";
};

// A container to tune for: its pod UID and container ID (without the runtime:// prefix).
struct Container {
  std::string pod_uid;
  std::string container_id;
};

// Receive-queue IRQs of `interface` (empty: every NIC under /sys/class/net with a device),
// from /proc/interrupts names like "eth0-rx-0", "eth0-TxRx-3", in queue order.
std::vector<int> FindQueueIrqs(const Roots& roots, const std::string& interface);

// The container's cpuset (cgroup v2 cpuset.cpus.effective, else v1 cpuset.cpus), found under
// <sys>/fs/cgroup by the pod UID (dashes or underscores) and the container ID.
std::optional<std::set<int>> FindContainerCpus(const Roots& roots, const Container& c);

struct TuneResult {
  std::map<int, std::string> written;  // irq -> affinity list written
  std::vector<std::string> errors;
};

// Applies `mode` ("onto" or "away") for the union of `exclusive` CPUs; with no exclusive CPUs
// restores the saved affinities. Idempotent: writes only what differs.
TuneResult Tune(const Roots& roots, const std::string& interface, const std::string& mode,
                const std::set<int>& exclusive);

}  // namespace keep::tuner
