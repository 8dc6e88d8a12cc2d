#include "dataplane/server/cluster_setup.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

namespace keep::server {

namespace {

constexpr int64_t kLeaveTimeoutMs = 60'000;

}  // namespace

void WriteReadyFile(const std::string& path, int client_port, const std::string& phase,
                    bool settled) {
  // Written whole and renamed into place, so a reader never sees half a file.
  std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << "ready port=" << client_port << " phase=" << phase
        << " settled=" << (settled ? "true" : "false") << "\n";
  }
  std::rename(temporary.c_str(), path.c_str());
}

std::string PrepareCluster(Config* config, std::optional<cluster::ClusterOptions>* out) {
  cluster::ClusterOptions options;
  std::string error;
  if (!config->members.empty()) {
    error = cluster::ParseInlineMembers(config->members, &options.members);
    if (!error.empty()) return "members: " + error;
  } else {
    std::ifstream in(config->members_file);
    if (!in) return "cannot read members-file '" + config->members_file + "'";
    std::stringstream text;
    text << in.rdbuf();
    error = cluster::ParseMembersJson(text.str(), &options.members);
    if (!error.empty()) return "members-file '" + config->members_file + "': " + error;
  }
  if (config->member_id.empty())
    return "cluster mode needs member-id (this member's id in the list)";
  error = cluster::ValidateMembers(options.members, config->member_id);
  if (!error.empty()) return "member list: " + error;
  if (config->peer_secret.empty()) {
    return "cluster mode needs the peer secret: peer-secret-file or KEEP_PEER_SECRET";
  }
  if (!config->slot_hash_crc16 && config->cluster_secret.empty()) {
    return "slot-hash keyed needs the cluster secret: secret-file or KEEP_SECRET (or use "
           "slot-hash crc16)";
  }
  const cluster::Member& self = options.members.members[options.members.IndexOf(config->member_id)];
  if (config->shards != 0 && config->shards != self.shards) {
    return "shards " + std::to_string(config->shards) + " differs from the member list's " +
           std::to_string(self.shards) + " for '" + self.id + "'";
  }
  config->shards = self.shards;
  config->port = self.client_port;
  config->shard_port_base = self.shard_port_base;
  std::random_device random;
  while (options.incarnation == 0) {
    options.incarnation = (static_cast<uint64_t>(random()) << 32) ^ random();
  }
  options.self_id = config->member_id;
  options.peer_secret = config->peer_secret;
  options.cluster_secret = config->cluster_secret;
  options.slot_hash = config->slot_hash_crc16 ? core::SlotHash::kCrc16 : core::SlotHash::kKeyed;
  options.bind_address = config->bind;
  options.max_lock_ttl_ms = config->max_lock_ttl_ms;
  options.admin_token = config->admin_token;
  *out = std::move(options);
  return "";
}

std::string ControlThread::Start(const cluster::ClusterOptions& options, const Config& config,
                                 int client_port, shard::ShardGroup* group) {
  self_id_ = options.self_id;
  incarnation_ = options.incarnation;
  control_ = std::make_unique<cluster::ClusterControl>(io_, options, &views_);
  control_->metrics_hook = [this, group] {
    return group->metrics().Render() + control_->MetricsText() + handoff_->MetricsText();
  };
  std::string error = control_->Start();
  if (!error.empty()) return error;

  // The handoff engine shares the peer port number (TCP beside the heartbeats' UDP) and runs
  // its store work on the shards through the task channel.
  cluster::HandoffOptions handoff_options;
  handoff_options.peer_secret = options.peer_secret;
  // A record must fit one message: the largest value plus its key and header.
  handoff_options.max_message_bytes = static_cast<size_t>(config.proto_max_bulk_len) + (1u << 20);
  group->tasks().Attach(io_);
  handoff_ = std::make_unique<cluster::HandoffDriver>(io_, *group, group->slot_function(),
                                                      handoff_options, control_.get());
  const cluster::Member& self = options.members.members[options.members.IndexOf(options.self_id)];
  error = handoff_->Listen(options.bind_address, self.peer_port);
  if (!error.empty()) return error;
  control_->SetHandoff(handoff_.get());
  if (!config.ready_file.empty()) {
    control_->on_readiness = [path = config.ready_file, client_port](const std::string& phase,
                                                                     bool settled) {
      WriteReadyFile(path, client_port, phase, settled);
    };
  }
  admin_ = std::make_unique<AdminHttpServer>(
      io_, [this](const cluster::AdminRequest& request) { return control_->HandleAdmin(request); });
  int port = config.admin_port != 0 ? config.admin_port : client_port + 2;
  error = admin_->Listen(config.bind, port);
  if (!error.empty()) return error;
  admin_port_ = admin_->port();
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "keep-control");
    io_.run();
  });
  return "";
}

std::string ControlThread::StartStandalone(const Config& config, int client_port,
                                           shard::ShardGroup* group) {
  self_id_ = "standalone";
  admin_ = std::make_unique<AdminHttpServer>(io_, [group](const cluster::AdminRequest& request) {
    cluster::AdminResponse response;
    std::string_view path = std::string_view(request.target).substr(0, request.target.find('?'));
    bool known = path == "/metrics" || path == "/healthz" || path == "/readyz";
    if (!known) {
      response.status = 404;
      response.body = R"({"error":"not found"})";
    } else if (request.method != "GET") {
      response.status = 405;
      response.body = R"({"error":"method not allowed"})";
    } else if (path == "/metrics") {
      response.content_type = telemetry::kExpositionContentType;
      response.body = group->metrics().Render();
    } else if (path == "/healthz") {
      response.content_type = "text/plain";
      response.body = "ok\n";
    } else {
      response.body = R"({"phase":"serving"})";
    }
    return response;
  });
  std::string error =
      admin_->Listen(config.bind, config.admin_port != 0 ? config.admin_port : client_port + 2);
  if (!error.empty()) return error;
  admin_port_ = admin_->port();
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "keep-control");
    io_.run();
  });
  return "";
}

ControlThread::~ControlThread() {
  if (control_) control_->Stop();
  if (admin_) boost::asio::post(io_, [this] { admin_->Stop(); });
  io_.stop();
  if (thread_.joinable()) thread_.join();
  admin_.reset();
  // The driver calls into the control loop and the shards: it goes first.
  if (handoff_) handoff_->Stop();
  handoff_.reset();
  control_.reset();
}

std::string ControlThread::Describe() const {
  char text[160];
  snprintf(text, sizeof(text), "%s incarnation=%016llx admin_port=%d", self_id_.c_str(),
           static_cast<unsigned long long>(incarnation_), admin_port_);
  return text;
}

bool ControlThread::Leave(sigset_t* signals) {
  if (!control_) return true;  // a single node has nothing to hand over
  control_->RequestLeave();
  timespec poll{0, 20'000'000};
  int64_t waited_ms = 0;
  while (!control_->left()) {
    if (waited_ms >= kLeaveTimeoutMs) {
      fprintf(stderr,
              "keep-server: cluster: leave did not finish within %lld ms; stopping anyway\n",
              static_cast<long long>(kLeaveTimeoutMs));
      return true;
    }
    int signal_number = sigtimedwait(signals, nullptr, &poll);
    if (signal_number == SIGINT) return false;
    if (signal_number < 0) waited_ms += 20;
  }
  return true;
}

}  // namespace keep::server
