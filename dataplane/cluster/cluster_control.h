// The control side of one member (design §2.1, §3): runs on the control thread's io_context
// (never on a shard). It sends and receives heartbeats, runs the failure detector and
// self-fencing, builds and publishes views, drives the member's phase (joining, serving,
// leaving, left) and answers the admin HTTP API (see README.md in this folder).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio.hpp>

#include "dataplane/cluster/admin_api.h"
#include "dataplane/cluster/handoff_hook.h"
#include "dataplane/cluster/heartbeat.h"
#include "dataplane/cluster/member_list.h"
#include "dataplane/cluster/view.h"
#include "dataplane/cluster/view_builder.h"
#include "dataplane/core/clock.h"

namespace keep::cluster {

struct ClusterOptions {
  MemberList members;
  std::string self_id;
  uint64_t incarnation = 0;
  std::string peer_secret;     // keys heartbeats and the default admin token
  std::string cluster_secret;  // keys slots and placement
  core::SlotHash slot_hash = core::SlotHash::kKeyed;
  std::string bind_address = "0.0.0.0";  // heartbeats are received here on the peer port
  int64_t max_lock_ttl_ms = 60000;
  std::string admin_token;  // empty: hex(HMAC-SHA256(peer secret, "keep-admin"))
};

// Lock quarantine for a slot gained without a handoff: every lock the former owner granted has
// expired by then, even if its clock ran a little fast.
int64_t LockQuarantineMs(int64_t max_lock_ttl_ms);

// CLOCK_MONOTONIC_RAW in nanoseconds: immune to NTP slewing, the failure detector's clock.
int64_t MonotonicRawNanos();

class ClusterControl {
 public:
  ClusterControl(boost::asio::io_context& io, ClusterOptions options, ViewPublisher* views);
  ~ClusterControl();

  // Binds the peer port, publishes the first (fenced) view and starts the timers. Returns an
  // error message or "". Call before the shards start, from any thread, before io.run().
  std::string Start();
  // Any thread.
  void Stop();
  void RequestLeave();
  bool left() const { return left_.load(std::memory_order_acquire); }

  // Control thread only.
  AdminResponse HandleAdmin(const AdminRequest& request);
  std::string MetricsText() const;
  void SetHandoff(HandoffHook* hook) { handoff_ = hook; }
  // `quarantine`: the slot opens with the lock quarantine (a member that may have held it died).
  bool FinishMove(uint32_t slot, bool quarantine = false);
  const View* view() const { return views_->current(); }
  std::string Phase() const;

  // GET /metrics answers with this; by default the cluster's own gauges (MetricsText).
  std::function<std::string()> metrics_hook;
  // Called on the control thread whenever the phase or readiness changes (for the ready file).
  std::function<void(const std::string& phase, bool settled)> on_readiness;
  // Serving, unfenced, no handoff in flight: what /readyz reports.
  bool Settled() const;

  // Counters of rejected input (heartbeats and admin calls).
  struct Rejections {
    uint64_t malformed = 0;
    uint64_t forged = 0;
    uint64_t replayed = 0;
    uint64_t unknown_member = 0;
    uint64_t unauthorized = 0;
    uint64_t bad_request = 0;
    uint64_t conflict = 0;
  };
  const Rejections& rejections() const { return rejections_; }

 private:
  enum class Lifecycle : uint8_t { kJoining, kServing, kLeaving, kLeft };

  void Receive();
  void OnDatagram(size_t size);
  void Tick();
  void SendHeartbeats(int64_t now_ns);
  void Resolve();
  void Rebuild();
  void ApplyMoves(const MoveEvents& events);
  void LogRejected(const char* what, uint64_t* counter);
  std::string ClusterJson() const;
  AdminResponse PutMembers(const AdminRequest& request);
  bool Authorized(const AdminRequest& request);
  int SelfIndex() const { return members_.IndexOf(options_.self_id); }

  boost::asio::io_context& io_;
  ClusterOptions options_;
  ViewPublisher* views_;
  MemberList members_;
  PeerTracker tracker_;
  ViewBuilder builder_;
  HandoffHook* handoff_ = nullptr;

  boost::asio::ip::udp::socket socket_;
  boost::asio::steady_timer timer_;
  std::array<uint8_t, 2048> receive_buffer_{};
  boost::asio::ip::udp::endpoint sender_;
  boost::asio::ip::udp::resolver resolver_;
  std::vector<std::optional<boost::asio::ip::udp::endpoint>> targets_;  // by member index
  std::vector<bool> resolving_;   // an asynchronous resolution is in flight
  uint64_t list_generation_ = 0;  // resolutions of an older member list are dropped
  int64_t last_resolve_ns_ = 0;
  int64_t last_send_ns_ = 0;
  int64_t started_ns_ = 0;
  uint64_t sequence_ = 0;

  Lifecycle phase_ = Lifecycle::kJoining;
  Lifecycle reported_phase_ = Lifecycle::kJoining;
  bool reported_settled_ = false;
  bool fenced_ = true;
  bool built_first_ = false;
  bool dirty_ = true;
  bool reborn_ = false;
  bool reborn_applied_ = false;
  int64_t left_at_ns_ = 0;
  std::atomic<bool> left_{false};
  std::atomic<bool> stopping_{false};
  std::string owners_digest_;
  // Per member of the list: the current view exports slots to it (heartbeats tell it so).
  std::vector<bool> exporting_to_;
  uint32_t slots_owned_ = 0;

  Rejections rejections_;
  int64_t last_reject_log_ns_ = 0;
  uint64_t suppressed_logs_ = 0;
};

}  // namespace keep::cluster
