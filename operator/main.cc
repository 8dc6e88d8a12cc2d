// keep-operator: the KeepCluster controller (design §5).
//   keep-operator [--kubeconfig PATH] [--namespace NS] [--bind IP] [--metrics-port 8080]
//                 [--leader-elect=true] [--lease-namespace NS] [--lease-name NAME]
//                 [--lease-duration 15] [--renew-deadline 10] [--retry-period 2] [--workers 2]
// Serves /metrics, /healthz and /readyz on BIND:METRICS-PORT.
#include <cpprest/http_listener.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "operator/cluster_spec.h"
#include "operator/kube/client.h"
#include "operator/kube/events.h"
#include "operator/kube/informer.h"
#include "operator/kube/leader_election.h"
#include "operator/kube/work_queue.h"
#include "operator/member_admin.h"
#include "operator/metrics.h"
#include "operator/reconciler.h"

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop = true; }

struct Flags {
  std::string kubeconfig;
  std::string watch_namespace;
  std::string bind = "0.0.0.0";
  int metrics_port = 8080;
  bool leader_elect = true;
  std::string lease_namespace;
  std::string lease_name = "keep-operator";
  int lease_duration = 15;
  int renew_deadline = 10;
  int retry_period = 2;
  int workers = 2;
  std::string log_level = "info";
};

bool ParseFlags(int argc, char** argv, Flags* f, std::string* error) {
  std::map<std::string, std::string*> strings = {{"kubeconfig", &f->kubeconfig},
                                                 {"namespace", &f->watch_namespace},
                                                 {"bind", &f->bind},
                                                 {"lease-namespace", &f->lease_namespace},
                                                 {"lease-name", &f->lease_name},
                                                 {"log-level", &f->log_level}};
  std::map<std::string, int*> ints = {{"metrics-port", &f->metrics_port},
                                      {"lease-duration", &f->lease_duration},
                                      {"renew-deadline", &f->renew_deadline},
                                      {"retry-period", &f->retry_period},
                                      {"workers", &f->workers}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      *error =
          "usage: keep-operator [--kubeconfig PATH] [--namespace NS] [--bind IP] "
          "[--metrics-port N] [--leader-elect=BOOL] [--lease-namespace NS] [--lease-name NAME] "
          "[--lease-duration S] [--renew-deadline S] [--retry-period S] [--workers N] "
          "[--log-level LEVEL]";
      return false;
    }
    if (!arg.starts_with("--")) {
      *error = "unexpected argument " + arg;
      return false;
    }
    std::string name = arg.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (name == "leader-elect") {
      value = "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      *error = "--" + name + " needs a value";
      return false;
    }
    if (name == "leader-elect") {
      if (value != "true" && value != "false") {
        *error = "--leader-elect must be true or false";
        return false;
      }
      f->leader_elect = value == "true";
    } else if (auto s = strings.find(name); s != strings.end()) {
      *s->second = value;
    } else if (auto n = ints.find(name); n != ints.end()) {
      char* end = nullptr;
      long v = strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || v <= 0 || v > 65535) {
        *error = "--" + name + " needs a positive integer, got '" + value + "'";
        return false;
      }
      *n->second = static_cast<int>(v);
    } else {
      *error = "unknown flag --" + name;
      return false;
    }
  }
  return true;
}

// "namespace/name" of the KeepCluster an owned object belongs to (label keep.dev/cluster).
std::string OwnerKey(const nlohmann::json& obj) {
  const auto& md = obj.value("metadata", nlohmann::json::object());
  std::string cluster = md.value("labels", nlohmann::json::object()).value("keep.dev/cluster", "");
  if (cluster.empty()) return "";
  return md.value("namespace", "") + "/" + cluster;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace keep;
  Flags flags;
  std::string error;
  if (!ParseFlags(argc, argv, &flags, &error)) {
    fprintf(stderr, "%s\n", error.c_str());
    return error.starts_with("usage") ? 0 : 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  signal(SIGPIPE, SIG_IGN);

  kube::ConfigResult cfg = kube::LoadConfig(flags.kubeconfig);
  if (!cfg.config) {
    fprintf(stderr, "keep-operator: %s\n", cfg.error.c_str());
    return 1;
  }
  if (flags.lease_namespace.empty()) flags.lease_namespace = cfg.config->namespace_name;
  kube::Client client(*cfg.config);
  op::Metrics metrics;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string identity = std::string(host) + "_" + std::to_string(getpid());
  kube::EventRecorder events(&client, "keep.dev/keep-operator", identity);
  op::HttpMemberAdmin admin;
  op::Reconciler reconciler(client, admin, events, metrics);
  kube::WorkQueue queue;

  std::atomic<bool> leading{false};
  std::atomic<bool> synced{false};
  web::http::experimental::listener::http_listener listener("http://" + flags.bind + ":" +
                                                            std::to_string(flags.metrics_port));
  listener.support(web::http::methods::GET, [&](web::http::http_request req) {
    std::string path = req.relative_uri().path();
    if (path == "/metrics") {
      metrics.queue_depth.Set(static_cast<double>(queue.Len()));
      req.reply(200, metrics.Serialize(), "text/plain; version=0.0.4");
    } else if (path == "/healthz") {
      req.reply(200, "ok\n", "text/plain");
    } else if (path == "/readyz") {
      // A standby is ready (it is healthy and waiting); a leader once its caches are synced.
      bool ready = !leading || synced;
      req.reply(ready ? 200 : 503, ready ? "ok\n" : "caches not synced\n", "text/plain");
    } else {
      req.reply(404, "not found\n", "text/plain");
    }
  });
  try {
    listener.open().wait();
  } catch (const std::exception& e) {
    fprintf(stderr, "keep-operator: cannot listen on %s:%d: %s\n", flags.bind.c_str(),
            flags.metrics_port, e.what());
    return 1;
  }
  printf("keep-operator: server %s, metrics on %s:%d, identity %s\n", cfg.config->server.c_str(),
         flags.bind.c_str(), flags.metrics_port, identity.c_str());

  if (flags.leader_elect) {
    kube::LeaderElector::Options le;
    le.lease_namespace = flags.lease_namespace;
    le.lease_name = flags.lease_name;
    le.identity = identity;
    le.lease_duration = std::chrono::seconds(flags.lease_duration);
    le.renew_deadline = std::chrono::seconds(flags.renew_deadline);
    le.retry_period = std::chrono::seconds(flags.retry_period);
    auto elector = std::make_shared<kube::LeaderElector>(client, le);
    printf("keep-operator: waiting for the lease %s/%s\n", le.lease_namespace.c_str(),
           le.lease_name.c_str());
    if (!elector->Acquire(g_stop)) return 0;
    printf("keep-operator: leading\n");
    leading = true;
    metrics.leader.Set(1);
    std::thread([elector, &queue] {
      elector->Hold(g_stop);
      if (!g_stop) {
        // Another instance may take over now: stop at once rather than act concurrently.
        fprintf(stderr, "keep-operator: lost the lease, exiting\n");
        _exit(1);
      }
      queue.ShutDown();
    }).detach();
  } else {
    leading = true;
    metrics.leader.Set(1);
  }

  const std::string& ns = flags.watch_namespace;
  kube::ApiListWatcher kc_lw(client, kube::ResourcePath("keep.dev/v1alpha1", "keepclusters", ns));
  kube::ApiListWatcher sts_lw(client, kube::ResourcePath("apps/v1", "statefulsets", ns),
                              "app.kubernetes.io/managed-by=keep-operator");
  kube::ApiListWatcher pod_lw(client, kube::ResourcePath("v1", "pods", ns),
                              "app.kubernetes.io/name=keep");
  kube::Informer kc_inf(kc_lw,
                        [&](const std::string& key, const nlohmann::json*) { queue.Add(key); });
  auto owned = [&](const std::string&, const nlohmann::json* obj) {
    if (obj != nullptr) {
      if (std::string key = OwnerKey(*obj); !key.empty()) queue.Add(key);
    }
  };
  kube::Informer sts_inf(sts_lw, owned);
  kube::Informer pod_inf(pod_lw, owned);
  std::vector<std::thread> threads;
  for (kube::Informer* inf : {&kc_inf, &sts_inf, &pod_inf}) {
    // Detached: a watch may sit in a read for minutes; nothing is lost by not waiting for it.
    std::thread([inf] { inf->Run(g_stop); }).detach();
  }
  while (!g_stop && !(kc_inf.synced() && sts_inf.synced() && pod_inf.synced())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  synced = true;
  printf("keep-operator: caches synced\n");

  for (int w = 0; w < flags.workers; ++w) {
    threads.emplace_back([&] {
      while (!g_stop) {
        auto key = queue.Get(std::chrono::milliseconds(500));
        if (!key) continue;
        auto slash = key->find('/');
        op::Reconciler::Result r;
        try {
          r = reconciler.Reconcile(key->substr(0, slash), key->substr(slash + 1));
        } catch (const std::exception& e) {
          // An object of an unexpected shape: retried with backoff, never fatal.
          r.error = true;
          r.message = std::string("unexpected: ") + e.what();
        }
        if (r.error) {
          metrics.reconcile_errors.Increment();
          fprintf(stderr, "reconcile %s: %s\n", key->c_str(), r.message.c_str());
          queue.Done(*key);
          queue.AddRateLimited(*key);
          continue;
        }
        queue.Forget(*key);
        queue.Done(*key);
        if (r.requeue_after.count() > 0) queue.AddAfter(*key, r.requeue_after);
      }
    });
  }
  int last_relists = 0;
  while (!g_stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    int relists = kc_inf.relists() + sts_inf.relists() + pod_inf.relists();
    if (relists > last_relists) metrics.relists.Increment(relists - last_relists);
    last_relists = relists;
  }
  printf("keep-operator: stopping\n");
  queue.ShutDown();
  client.Cancel();
  for (auto& t : threads) t.join();  // the workers: no reconcile is cut in half
  listener.close().wait();
  fflush(stdout);
  // Informer threads may still be blocked in a watch read: leave without running destructors
  // under them.
  _exit(0);
}
