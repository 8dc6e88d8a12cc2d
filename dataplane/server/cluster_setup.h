// The process wiring of the control thread (one Boost.Asio io_context, never pinned): in cluster
// mode it runs ClusterControl and the admin HTTP server; on a single node started with
// --admin-port, the admin HTTP server alone (/healthz, /readyz, /metrics). Also reads the member
// list and secrets into ClusterOptions.
#pragma once

#include <signal.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio.hpp>

#include "dataplane/cluster/cluster_control.h"
#include "dataplane/cluster/handoff_driver.h"
#include "dataplane/cluster/view.h"
#include "dataplane/server/admin_http.h"
#include "dataplane/server/config.h"
#include "dataplane/shard/shard_group.h"

namespace keep::server {

// The ready file (--ready-file): "ready port=P phase=<phase> settled=<true|false>". A single node
// is settled once it listens; a member once it serves, unfenced, with no handoff in flight.
void WriteReadyFile(const std::string& path, int client_port, const std::string& phase,
                    bool settled);

// Loads and checks the member list and secrets; sets the port, shard port base and shard count
// of `config` from this member's entry. Returns an error message or "".
std::string PrepareCluster(Config* config, std::optional<cluster::ClusterOptions>* out);

class ControlThread {
 public:
  explicit ControlThread(int shards) : views_(shards) {}
  ~ControlThread();

  // Cluster mode. /metrics serves `group`'s metrics and the cluster's.
  std::string Start(const cluster::ClusterOptions& options, const Config& config, int client_port,
                    shard::ShardGroup* group);
  // A single node: the admin HTTP server alone.
  std::string StartStandalone(const Config& config, int client_port, shard::ShardGroup* group);
  cluster::ViewPublisher* views() { return &views_; }
  // The control loop, e.g. to set its metrics_hook (telemetry) or a handoff engine. Its methods
  // run on the control thread: post to io() to call them from elsewhere.
  cluster::ClusterControl* control() { return control_.get(); }
  boost::asio::io_context& io() { return io_; }
  std::string Describe() const;
  // Leaves the cluster and waits (bounded) until this member has left. Returns false when a
  // SIGINT (in `signals`) asks to stop at once.
  bool Leave(sigset_t* signals);

 private:
  boost::asio::io_context io_;
  cluster::ViewPublisher views_;
  std::unique_ptr<cluster::ClusterControl> control_;
  std::unique_ptr<cluster::HandoffDriver> handoff_;
  std::unique_ptr<AdminHttpServer> admin_;
  std::thread thread_;
  std::string self_id_;
  uint64_t incarnation_ = 0;
  int admin_port_ = 0;
};

}  // namespace keep::server
