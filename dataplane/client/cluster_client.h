// libkeep against a cluster (design §3.6): seeds from one or more members, fetches TOPOLOGY from
// every member it can reach, follows the view most of them report, places keys on slots itself
// (keyed XXH3 with the cluster secret, or crc16) and sends each request straight to the shard
// that owns its slot, over one lazily opened Connection per endpoint.
//
// Refusals are handled here, within a time budget per request (ClusterOptions::retry_budget):
// MOVED is followed at once (and patches the slot map) and starts a background refresh; BUSY is
// retried with backoff, never sooner than the server's retry_after_ms (the lock quarantine after
// a crash names its remaining time, about 1.3 s); FENCED and a lost connection start a refresh
// and retry, on whichever endpoint the slot map then names. A request that cannot be served in
// its budget fails with ErrorKind::kUnavailable carrying the last refusal's status.
//
// A request whose connection dropped may have run before the drop: it is retried like the
// others, so a non-idempotent op (INCR) can apply twice then, as with other cluster clients.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/client/cluster_router.h"
#include "dataplane/client/keep_client.h"

namespace keep::client {

enum class SlotMode {
  kDetect,  // ask a member CLUSTER KEYSLOT for probe keys and pick the function that agrees
  kKeyed,   // XXH3 keyed by ClusterOptions::slot_secret
  kCrc16,   // Redis Cluster's CRC16
  kNone,    // do not place keys: send them to members and follow MOVED
};

struct ClusterOptions {
  std::vector<Endpoint> seeds;
  Options connection;       // every endpoint's connection settings (host and port are replaced)
  std::string slot_secret;  // the cluster secret that keys slots (the server's KEEP_SECRET)
  SlotMode slot_mode = SlotMode::kDetect;
  // Total time one request may spend on retries before it fails with kUnavailable.
  std::chrono::milliseconds retry_budget{5000};
  std::chrono::milliseconds min_backoff{1};  // doubled per retry
  std::chrono::milliseconds max_backoff{100};
  // MOVED replies followed for one request before giving up (views disagreeing for that long).
  int max_redirects = 16;
  // Topology refreshes are at least this far apart, however many refusals ask for one.
  std::chrono::milliseconds refresh_interval{100};
  // A refresh stops waiting for members that have not answered TOPOLOGY by then (the first
  // fetch waits for connection.connect_timeout + connection.timeout).
  std::chrono::milliseconds refresh_timeout{1000};
};

struct ClusterStats {
  uint64_t moved = 0;               // MOVED replies followed
  uint64_t busy_retries = 0;        // BUSY replies retried
  uint64_t fenced_retries = 0;      // FENCED replies retried
  uint64_t connection_retries = 0;  // requests retried after their connection failed
  uint64_t refreshes = 0;           // topology refreshes completed
  uint64_t view_changes = 0;        // refreshes whose majority view moved slots
  uint64_t unavailable = 0;         // requests given up
};

// Runs one request on a connection; it may run again on another after a refusal.
using Op = std::function<void(Connection&, Handler)>;

// All methods must be called on the io_context's thread.
class ClusterClient : public std::enable_shared_from_this<ClusterClient> {
 public:
  static std::shared_ptr<ClusterClient> Create(boost::asio::io_context& io, ClusterOptions options);
  ~ClusterClient();

  // Fetches the topology (from the seeds, then from every member they list), adopts the
  // majority view and settles how keys are placed. `done` gets an error when no seed answered.
  // Requests issued before then wait for it.
  void AsyncStart(std::function<void(std::optional<Error>)> done);
  void Close();

  // Runs `op` against the shard serving `key`'s slot.
  void Execute(std::string_view key, Op op, Handler h);
  // Runs `op` against any member (ops without a key).
  void ExecuteAnywhere(Op op, Handler h);

  void AsyncPing(Handler h);
  void AsyncGet(std::string_view key, Handler h);
  void AsyncSet(std::string_view key, std::string_view value, uint64_t ttl_ms, uint8_t flags,
                Handler h);
  void AsyncDel(std::string_view key, Handler h);
  void AsyncExists(std::string_view key, Handler h);
  void AsyncIncr(std::string_view key, int64_t delta, uint64_t ttl_on_create_ms, Handler h);
  void AsyncExpire(std::string_view key, uint64_t ttl_ms, uint8_t flags, Handler h);
  void AsyncLock(std::string_view key, std::string_view owner, uint64_t ttl_ms, Handler h);
  void AsyncUnlock(std::string_view key, std::string_view owner, Handler h);
  void AsyncExtend(std::string_view key, std::string_view owner, uint64_t ttl_ms, Handler h);
  void AsyncThrottle(std::string_view key, uint64_t max_burst, uint64_t count, uint64_t period_s,
                     uint64_t quantity, Handler h);
  void AsyncFixedWindow(std::string_view key, uint64_t limit, uint64_t window_ms, uint64_t cost,
                        Handler h);
  // Routed by args[1] (the first key of most commands); args of one element go anywhere.
  void AsyncCommand(const std::vector<std::string>& args, Handler h);

  // Starts a refresh now, or as soon as refresh_interval allows.
  void RequestRefresh();

  const ClusterStats& stats() const { return stats_; }
  const ClusterRouter& router() const { return router_; }
  bool started() const { return started_; }
  // The slot function in use after AsyncStart (kNone when keys are not placed by the client).
  SlotMode slot_mode() const { return slot_mode_; }

 private:
  struct Request {
    std::optional<std::string> key;  // nullopt: any member
    Op op;
    Handler handler;
    std::chrono::steady_clock::time_point deadline;
    std::optional<Endpoint> target;  // set after MOVED: the next attempt goes there
    int attempts = 0;
    int redirects = 0;
  };
  using RequestPtr = std::shared_ptr<Request>;

  ClusterClient(boost::asio::io_context& io, ClusterOptions options);
  void Submit(RequestPtr request);
  void Dispatch(RequestPtr request);
  void OnResult(RequestPtr request, Result result);
  void RetryAfter(RequestPtr request, std::chrono::milliseconds delay, const Error& last);
  void GiveUp(RequestPtr request, const Error& last, const std::string& why);
  std::shared_ptr<Connection> ConnectionTo(const Endpoint& endpoint);

  // Asks every source for TOPOLOGY, adopts the majority view, then runs `done`.
  void Refresh(std::function<void()> done);
  void DetectSlotFunction(std::function<void()> done);
  void FinishStart();

  boost::asio::io_context& io_;
  ClusterOptions options_;
  ClusterRouter router_;
  SlotMode slot_mode_ = SlotMode::kNone;
  std::map<std::string, std::shared_ptr<Connection>> pool_;  // by "host:port"
  bool closed_ = false;
  bool started_ = false;
  bool starting_ = false;
  std::function<void(std::optional<Error>)> start_done_;
  std::vector<RequestPtr> waiting_;  // issued before the first view

  bool refreshing_ = false;
  bool refresh_again_ = false;
  bool refresh_armed_ = false;
  std::vector<std::function<void()>> refresh_waiters_;
  std::shared_ptr<boost::asio::steady_timer> gather_timer_;  // the refresh's answer deadline
  std::map<uint64_t, std::shared_ptr<boost::asio::steady_timer>> retry_timers_;
  uint64_t next_timer_id_ = 0;
  std::chrono::steady_clock::time_point last_refresh_{};
  std::string last_refresh_error_;  // why the last refresh got no view
  boost::asio::steady_timer refresh_timer_;
  ClusterStats stats_;
};

}  // namespace keep::client
