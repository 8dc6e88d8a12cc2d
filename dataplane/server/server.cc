#include "dataplane/server/server.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "dataplane/cluster/cluster_control.h"
#include "dataplane/core/clock.h"
#include "dataplane/server/admin_http.h"
#include "dataplane/server/cluster_setup.h"
#include "dataplane/server/config.h"
#include "dataplane/server/cpu_budget.h"
#include "dataplane/server/listeners.h"
#include "dataplane/shard/shard_group.h"

namespace keep::server {

namespace {

constexpr char kVersion[] = "0.1.0";

std::string RandomHex(size_t length) {
  std::random_device device;
  std::string out;
  static constexpr char kDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < length; ++i) out.push_back(kDigits[device() % 16]);
  return out;
}

std::string JoinInts(const std::vector<int>& values) {
  std::string out;
  for (int v : values) {
    if (!out.empty()) out += ',';
    out += std::to_string(v);
  }
  return out.empty() ? "none" : out;
}

std::string_view DefaultPolicyName(const Config& config) {
  core::KeyClassTable table;
  std::string error;
  core::KeyClassTable::Build(config.key_classes, &table, &error);
  return core::RedisPolicyName(table.PolicyOf(core::KeyClassTable::kDefaultClass));
}

std::map<std::string, std::string> ConfigView(const Config& config, int port) {
  return {
      {"bind", config.bind},
      {"port", std::to_string(port)},
      {"maxclients", std::to_string(config.maxclients)},
      {"max-lock-ttl", std::to_string(config.max_lock_ttl_ms)},
      {"lua-time-limit", std::to_string(config.lua_time_limit_ms)},
      {"timeout", std::to_string(config.timeout_seconds)},
      {"tcp-backlog", std::to_string(config.tcp_backlog)},
      {"proto-max-bulk-len", std::to_string(config.proto_max_bulk_len)},
      {"client-query-buffer-limit", std::to_string(config.client_query_buffer_limit)},
      {"client-output-buffer-limit", std::to_string(config.client_output_buffer_limit)},
      {"databases", "1"},
      {"save", ""},
      {"appendonly", "no"},
      {"maxmemory", std::to_string(config.maxmemory)},
      {"maxmemory-policy", std::string(DefaultPolicyName(config))},
  };
}

int Fail(const std::string& message) {
  fprintf(stderr, "keep-server: %s\n", message.c_str());
  return 1;
}

}  // namespace

int RunServer(const std::vector<std::string>& argv, const std::vector<std::string>& environment) {
  LoadResult loaded = LoadConfig(argv, environment);
  if (!loaded.config) {
    if (loaded.exit_ok) {
      printf("%s\n", loaded.message.c_str());
      return 0;
    }
    return Fail(loaded.message);
  }
  Config config = *loaded.config;
  // Cluster mode: the member list decides this member's ports and shard count.
  std::optional<cluster::ClusterOptions> cluster_options;
  if (!config.members.empty() || !config.members_file.empty()) {
    std::string cluster_error = PrepareCluster(&config, &cluster_options);
    if (!cluster_error.empty()) return Fail(cluster_error);
  }

  CpuBudget budget = DetectCpuBudget();
  if (budget.cgroup_v1 && config.shards == 0) {
    return Fail("the CPU quota cannot be read on cgroup v1: give --shards explicitly");
  }
  int shards = config.shards > 0 ? config.shards : budget.budget;
  bool pin = false;
  if (config.pin == PinMode::kAlways) {
    if (static_cast<int>(budget.allowed_cpus.size()) < shards) {
      return Fail("--pin always needs a CPU per shard: " + std::to_string(shards) +
                  " shards, allowed CPUs " + JoinInts(budget.allowed_cpus));
    }
    pin = true;
  } else if (config.pin == PinMode::kAuto) {
    pin = budget.exclusive && static_cast<int>(budget.allowed_cpus.size()) == shards;
  }
  if (shards > budget.budget) {
    fprintf(stderr,
            "keep-server: warning: %d shards on a budget of %d CPUs: shards will share CPUs "
            "and latency suffers\n",
            shards, budget.budget);
  }

  // Signals are taken by sigwait in this thread only; shard threads inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  ListenerSet listeners;
  std::string error = OpenListeners(config.bind, config.port, config.shard_port_base, shards,
                                    static_cast<int>(config.tcp_backlog), &listeners);
  if (!error.empty()) return Fail(error);

  std::vector<int> shard_cpus;
  if (pin) {
    shard_cpus.assign(budget.allowed_cpus.begin(), budget.allowed_cpus.begin() + shards);
    std::string steering = AttachCpuSteering(listeners.client_fds[0], shard_cpus);
    if (!steering.empty()) fprintf(stderr, "keep-server: warning: %s\n", steering.c_str());
  }

  commands::ServerFacts facts;
  facts.run_id = RandomHex(40);
  facts.version = kVersion;
  facts.executable = argv.empty() ? "keep-server" : argv[0];
  facts.config_file = config.config_file;
  facts.tcp_port = listeners.client_port;
  facts.shard_count = shards;
  if (config.shard_port_base > 0) {
    for (int i = 0; i < shards; ++i) facts.shard_ports.push_back(config.shard_port_base + i);
  }
  facts.start_ms = core::WallMillis();
  facts.pid = getpid();
  facts.maxmemory = static_cast<uint64_t>(config.maxmemory);
  facts.cluster_enabled = cluster_options.has_value();

  std::vector<shard::ShardOptions> shard_options;
  for (int i = 0; i < shards; ++i) {
    shard::ShardOptions options;
    options.index = i;
    options.count = shards;
    options.pin_cpu = pin ? shard_cpus[i] : -1;
    options.listen_fds.push_back(listeners.client_fds[i]);
    if (!listeners.shard_fds.empty()) options.listen_fds.push_back(listeners.shard_fds[i]);
    options.resp_limits.max_bulk_len = static_cast<size_t>(config.proto_max_bulk_len);
    options.command_limits.proto_max_bulk_len = config.proto_max_bulk_len;
    // The binary protocol's value limit: its default, or proto-max-bulk-len when that is lower.
    options.binary_limits.max_value_size = std::min<size_t>(
        options.binary_limits.max_value_size, static_cast<size_t>(config.proto_max_bulk_len));
    options.command_limits.enable_debug_command = config.enable_debug_command;
    options.io_uring = config.io_uring;
    options.command_limits.max_lock_ttl_ms = config.max_lock_ttl_ms;
    options.command_limits.lua_time_limit_ms = config.lua_time_limit_ms;
    options.client_output_buffer_limit = config.client_output_buffer_limit;
    options.client_query_buffer_limit = config.client_query_buffer_limit;
    options.command_limits.requirepass = config.requirepass;
    std::string class_error;  // LoadConfig validated the table already
    core::KeyClassTable::Build(config.key_classes, &options.key_classes, &class_error);
    shard_options.push_back(std::move(options));
  }
  core::SlotFunction slot_function(
      config.slot_hash_crc16 ? core::SlotHash::kCrc16 : core::SlotHash::kKeyed,
      config.cluster_secret);
  auto group = std::make_unique<shard::ShardGroup>(std::move(shard_options), slot_function, facts,
                                                   ConfigView(config, listeners.client_port),
                                                   config.maxclients);
  group->on_shutdown_request = [] { kill(getpid(), SIGTERM); };
  // Cluster mode: the control thread (heartbeats, views, admin HTTP) starts before the shards,
  // so they never serve a key without a view (the first one is fenced).
  std::unique_ptr<ControlThread> control;
  if (cluster_options) {
    control = std::make_unique<ControlThread>(shards);
    std::string control_error =
        control->Start(*cluster_options, config, listeners.client_port, group.get());
    if (!control_error.empty()) return Fail(control_error);
    group->set_views(control->views());
  } else if (config.admin_port != 0) {
    // A single node serves the admin endpoints (metrics, health) only when given a port: client
    // port + 2 could belong to another server on a shared host.
    control = std::make_unique<ControlThread>(shards);
    std::string control_error =
        control->StartStandalone(config, listeners.client_port, group.get());
    if (!control_error.empty()) return Fail(control_error);
  }
  group->Start();

  // A member's ready file follows its phase from the control thread; it exists from here on.
  if (!config.ready_file.empty() && !cluster_options) {
    WriteReadyFile(config.ready_file, listeners.client_port, "serving", true);
  } else if (!config.ready_file.empty()) {
    boost::asio::post(control->io(), [&config, &listeners, c = control->control()] {
      WriteReadyFile(config.ready_file, listeners.client_port, c->Phase(), c->Settled());
    });
  }
  std::string quota = budget.quota_cpus ? std::to_string(*budget.quota_cpus) : "none";
  fprintf(stderr,
          "keep-server started version=%s pid=%d bind=%s port=%d shards=%d budget=%d "
          "allowed_cpus=%s quota_cpus=%s pinned=%s cpus=%s shard_ports=%s "
          "maxclients=%lld maxmemory=%lld tls=off member=%s\n",
          kVersion, getpid(), config.bind.c_str(), listeners.client_port, shards, budget.budget,
          JoinInts(budget.allowed_cpus).c_str(), quota.c_str(), pin ? "true" : "false",
          pin ? JoinInts(shard_cpus).c_str() : "any",
          config.shard_port_base > 0 ? (std::to_string(config.shard_port_base) + "-" +
                                        std::to_string(config.shard_port_base + shards - 1))
                                           .c_str()
                                     : "off",
          static_cast<long long>(config.maxclients), static_cast<long long>(config.maxmemory),
          control ? control->Describe().c_str() : "standalone");

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  int interrupts = signal_number == SIGINT ? 1 : 0;
  fprintf(stderr, "keep-server: stopping (%s)\n", interrupts > 0 ? "SIGINT" : "SIGTERM");
  if (control && interrupts == 0) {
    // A clean leave first (design §3.5): hand the slots over, then stop serving.
    if (!control->Leave(&signals)) {
      fprintf(stderr, "keep-server: second SIGINT, exiting now\n");
      _exit(130);
    }
  }
  group->RequestStop();
  std::atomic<bool> stopped{false};
  std::thread waiter([&] {
    group->Wait();
    stopped = true;
  });
  timespec poll{0, 50'000'000};
  while (!stopped) {
    signal_number = sigtimedwait(&signals, nullptr, &poll);
    if (signal_number == SIGINT && ++interrupts >= 2) {
      fprintf(stderr, "keep-server: second SIGINT, exiting now\n");
      _exit(130);
    }
  }
  waiter.join();
  // The control thread reads the shards' metrics: stop it before they go.
  control.reset();
  group.reset();
  if (!config.ready_file.empty()) std::filesystem::remove(config.ready_file);
  fprintf(stderr, "keep-server: stopped\n");
  return 0;
}

}  // namespace keep::server
