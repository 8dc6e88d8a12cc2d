// keep-node-tuner: the privileged per-node agent of a KeepCluster with irqAffinity. Every few
// seconds it lists the cluster's pods on its node, finds the keep containers' cpusets and
// applies the IRQ affinity (irq_tuner.h); on SIGTERM it restores what it changed.
//   keep-node-tuner --mode onto|away --namespace NS --node NODE --selector SEL
//                   [--interface IFACE] [--host-proc /proc] [--host-sys /sys]
//                   [--state-dir DIR] [--interval 5] [--kubeconfig PATH] [--once]
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include "operator/kube/client.h"
#include "operator/node_tuner/irq_tuner.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  using namespace keep;
  std::map<std::string, std::string> flags = {
      {"mode", ""},         {"namespace", ""},
      {"node", ""},         {"selector", ""},
      {"interface", ""},    {"host-proc", "/proc"},
      {"host-sys", "/sys"}, {"state-dir", "/var/lib/keep-node-tuner"},
      {"interval", "5"},    {"kubeconfig", ""}};
  bool once = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--once") {
      once = true;
      continue;
    }
    if (arg == "--help") {
      printf(
          "usage: keep-node-tuner --mode onto|away --namespace NS --node NODE --selector SEL "
          "[--interface IFACE] [--host-proc DIR] [--host-sys DIR] [--state-dir DIR] "
          "[--interval S] [--kubeconfig PATH] [--once]\n");
      return 0;
    }
    std::string name = arg.rfind("--", 0) == 0 ? arg.substr(2) : arg, value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    }
    if (!flags.count(name)) {
      fprintf(stderr, "keep-node-tuner: unknown flag %s\n", arg.c_str());
      return 2;
    }
    flags[name] = value;
  }
  if ((flags["mode"] != "onto" && flags["mode"] != "away") || flags["namespace"].empty() ||
      flags["node"].empty() || flags["selector"].empty()) {
    fprintf(stderr,
            "keep-node-tuner: --mode onto|away, --namespace, --node and --selector are required\n");
    return 2;
  }
  int interval = atoi(flags["interval"].c_str());
  if (interval <= 0) interval = 5;
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);

  kube::ConfigResult cfg = kube::LoadConfig(flags["kubeconfig"]);
  if (!cfg.config) {
    fprintf(stderr, "keep-node-tuner: %s\n", cfg.error.c_str());
    return 1;
  }
  kube::Client client(*cfg.config);
  tuner::Roots roots{flags["host-proc"], flags["host-sys"], flags["state-dir"]};
  std::string path = kube::ResourcePath("v1", "pods", flags["namespace"]) +
                     "?labelSelector=" + kube::UrlEncode(flags["selector"]) +
                     "&fieldSelector=" + kube::UrlEncode("spec.nodeName=" + flags["node"]);
  std::string last;
  while (!g_stop) {
    kube::Response pods = client.Get(path);
    if (pods.ok() && pods.body.contains("items") && pods.body["items"].is_array()) {
      std::set<int> exclusive;
      for (const auto& pod : pods.body.value("items", nlohmann::json::array())) {
        std::string uid = pod["metadata"].value("uid", "");
        for (const auto& cs : pod.value("status", nlohmann::json::object())
                                  .value("containerStatuses", nlohmann::json::array())) {
          if (cs.value("name", "") != "keep") continue;
          std::string id = cs.value("containerID", "");
          if (auto p = id.find("://"); p != std::string::npos) id = id.substr(p + 3);
          if (auto cpus = tuner::FindContainerCpus(roots, {uid, id})) {
            exclusive.insert(cpus->begin(), cpus->end());
          }
        }
      }
      tuner::TuneResult r = tuner::Tune(roots, flags["interface"], flags["mode"], exclusive);
      std::string summary = tuner::FormatCpuList(exclusive);
      if (summary != last || !r.written.empty()) {
        printf("keep-node-tuner: exclusive cpus [%s], %zu irqs written\n", summary.c_str(),
               r.written.size());
        last = summary;
      }
      for (const auto& e : r.errors) fprintf(stderr, "keep-node-tuner: %s\n", e.c_str());
    } else {
      fprintf(stderr, "keep-node-tuner: list pods: %d %s\n", pods.status, pods.error.c_str());
    }
    if (once) break;
    for (int i = 0; i < interval * 10 && !g_stop; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (!once) {
    // The DaemonSet is going away (irqAffinity dropped, or the cluster deleted): put back
    // what was there before.
    tuner::TuneResult r = tuner::Tune(roots, flags["interface"], flags["mode"], {});
    printf("keep-node-tuner: restored %zu irqs\n", r.written.size());
  }
  return 0;
}
