// libkeep: a client for Keep's binary protocol (dataplane/proto/binary_protocol.md).
//
// Connection is the asynchronous core on Boost.Asio: requests get ids, replies are matched by id in
// any order, BUSY is retried with backoff, every request has a deadline. Requests queued while a
// write is in flight leave together in the next write (at most max_batch_requests or
// max_batch_bytes), and a request is never held back to fill a batch. SyncClient wraps it for
// callers without an event loop. ClusterClient (cluster_client.h) routes by slot across a cluster.
#pragma once

// Boost 1.74's asio uses std::exchange without including <utility> (fails on g++ 12).
#include <utility>

#include <boost/asio.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dataplane/proto/binary_codec.h"

namespace keep::client {

using proto::binary::Status;

enum class ErrorKind {
  kServer,      // the server answered an error status (status() says which)
  kTimeout,     // no reply before the request's deadline
  kConnection,  // connect failed or the connection closed with the request outstanding
  kProtocol,    // the server sent bytes that are not the protocol
  // A cluster client gave up on a request it kept being refused or could not deliver within its
  // retry budget (cluster_client.h): status() is the last refusal (BUSY, MOVED, FENCED), ERROR
  // when the last attempt found no connection.
  kUnavailable,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, Status status, std::string message, uint32_t retry_after_ms = 0)
      : std::runtime_error(message),
        kind_(kind),
        status_(status),
        message_(std::move(message)),
        retry_after_ms_(retry_after_ms) {}
  ErrorKind kind() const { return kind_; }
  Status status() const { return status_; }
  const std::string& message() const { return message_; }
  uint32_t retry_after_ms() const { return retry_after_ms_; }  // BUSY only

 private:
  ErrorKind kind_;
  Status status_;
  std::string message_;
  uint32_t retry_after_ms_;
};

// One reply. `error` is set for transport failures and for every status other than OK, NIL and
// LOCKED (those are ordinary outcomes the typed helpers interpret). `body` is the reply's body
// for error statuses too (MOVED's names the endpoint to follow).
struct Result {
  std::optional<Error> error;
  Status status = Status::kOk;
  std::string body;
  bool ok() const { return !error.has_value(); }
};

using Handler = std::function<void(Result)>;
// Event frames of a subscription; heartbeat events have an empty channel and message.
using EventHandler = std::function<void(const proto::binary::Event&)>;
// Appends one request frame with the given id to `out`.
using Encoder = std::function<void(std::string* out, uint32_t id)>;

struct Options {
  std::string host = "127.0.0.1";
  uint16_t port = 7000;
  std::string client_name = "libkeep";
  std::string secret;  // HMAC key for HELLO when the server requires auth
  bool batching = true;
  size_t max_batch_requests = 256;
  size_t max_batch_bytes = 1 << 20;
  std::chrono::milliseconds timeout{2000};
  std::chrono::milliseconds connect_timeout{2000};
  int busy_retries = 5;
  std::chrono::milliseconds busy_backoff{1};  // doubled per retry, at least the server's hint
  std::chrono::milliseconds max_backoff{200};
};

struct Stats {
  uint64_t writes = 0;
  uint64_t requests_written = 0;
  uint64_t busy_retries = 0;
};

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  bool operator==(const Endpoint&) const = default;
};

// Chooses the endpoint for a key: ClusterRouter (cluster_router.h) follows the cluster's slot
// map, fed by TOPOLOGY and MOVED.
class Router {
 public:
  virtual ~Router() = default;
  virtual Endpoint Route(std::string_view key) = 0;
  virtual void OnMoved(const proto::binary::Moved& moved) = 0;
};

class SingleEndpointRouter : public Router {
 public:
  explicit SingleEndpointRouter(Endpoint endpoint) : endpoint_(std::move(endpoint)) {}
  Endpoint Route(std::string_view) override { return endpoint_; }
  void OnMoved(const proto::binary::Moved&) override {}

 private:
  Endpoint endpoint_;
};

// HMAC-SHA256(secret, nonce): the HELLO proof.
std::string HelloProof(std::string_view secret, std::string_view nonce);

// A TOPOLOGY reply with owned strings: what a router needs to send each slot to its shard.
struct Topology {
  struct ShardEndpoint {
    std::string host;
    uint16_t port = 0;
    std::vector<std::pair<uint16_t, uint16_t>> slot_ranges;  // inclusive
  };
  struct Member {
    std::string id;  // empty on a single node
    std::string host;
    uint16_t client_port = 0;
    proto::binary::MemberState state = proto::binary::MemberState::kUp;
    size_t first_endpoint = 0;  // its endpoints: endpoints[first_endpoint, + endpoint_count)
    size_t endpoint_count = 0;
  };
  uint64_t view_epoch = 0;  // 0 on a single node
  bool cluster = false;     // answered from a cluster view
  bool fenced = false;      // the answering member is fenced
  size_t self = 0;          // the answering member, an index into `members`
  std::vector<ShardEndpoint> endpoints;
  std::vector<Member> members;

  // The endpoint listed for `slot`, or nullopt when none is (a slot with no live owner).
  std::optional<client::Endpoint> EndpointFor(uint16_t slot) const;
};

// Parses a TOPOLOGY reply body; false when it is malformed.
bool ParseTopologyBody(std::string_view body, Topology* topology);

// All methods must be called on the io_context's thread (SyncClient posts for you).
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  static std::shared_ptr<Connection> Create(boost::asio::io_context& io, Options options);
  ~Connection();

  // Resolves, connects, sends the preface, reads the server preface and completes the HELLO.
  // Requests issued before it completes are queued and sent right after.
  void AsyncConnect(std::function<void(std::optional<Error>)> done);
  void Close();
  bool connected() const { return ready_; }
  // Closed for good (Close, a failed connect, a lost connection): a new one is needed.
  bool closed() const { return closed_; }
  const Stats& stats() const { return stats_; }
  uint64_t client_id() const { return client_id_; }

  void Send(Encoder encode, Handler handler);

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
  void AsyncPublish(std::string_view channel, std::string_view message, Handler h);
  void AsyncCommand(const std::vector<std::string>& args, Handler h);
  // The reply body parses with ParseTopologyBody.
  void AsyncTopology(Handler h);
  // `done` gets the SUBSCRIBE reply; on success *subscription_id (passed to `done` via the
  // result body's u64 current number) is the request id, also returned here.
  uint32_t AsyncSubscribe(std::string_view channel, bool pattern, EventHandler on_event,
                          Handler done);
  void AsyncUnsubscribe(uint32_t subscription_id, Handler h);

 private:
  struct Pending {
    std::string frame;  // kept for BUSY retries
    Handler handler;
    std::chrono::steady_clock::time_point deadline;
    int attempts = 0;
  };

  Connection(boost::asio::io_context& io, Options options);
  uint32_t NextId();
  void Enqueue(std::string_view frame);
  void StartWrite();
  void StartRead();
  void OnFrame(const proto::binary::ReplyView& reply);
  void OnServerPreface(const proto::binary::ReplyView& reply);
  void Complete(uint32_t id, Result result);
  void RetryLater(uint32_t id, uint32_t retry_after_ms);
  void ArmSweep();
  void FailAll(const Error& error);
  void FinishConnect(std::optional<Error> error);

  boost::asio::io_context& io_;
  Options options_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::steady_timer sweep_;
  boost::asio::steady_timer connect_timer_;
  bool sweep_armed_ = false;
  bool ready_ = false;
  bool hello_queued_ = false;  // nothing but the preface is written before the HELLO
  bool closed_ = false;
  std::function<void(std::optional<Error>)> connect_done_;
  uint32_t hello_id_ = 0;
  uint64_t client_id_ = 0;

  uint32_t next_id_ = 0;
  std::unordered_map<uint32_t, Pending> pending_;
  std::unordered_map<uint32_t, EventHandler> subscriptions_;

  // Encoded frames waiting for the next write, back to back, and their sizes.
  std::string queued_;
  std::deque<size_t> queued_sizes_;
  std::string write_buf_;
  bool writing_ = false;

  std::vector<char> read_buf_;
  size_t read_len_ = 0;
  proto::binary::Decoder decoder_;
  Stats stats_;
};

struct ThrottleResult {
  bool limited = false;
  int64_t limit = 0, remaining = 0, retry_after_s = 0, reset_after_s = 0;
};
struct FixedWindowResult {
  bool allowed = false;
  int64_t remaining = 0, reset_ms = 0;
};
struct SetOptions {
  uint64_t ttl_ms = 0;
  bool nx = false, xx = false, keep_ttl = false;
};

// Blocking wrapper: runs its own io_context on a background thread. Every call throws Error on
// failure. Thread-safe: calls from several threads share the connection (and its batching).
class SyncClient {
 public:
  explicit SyncClient(Options options);
  ~SyncClient();
  SyncClient(const SyncClient&) = delete;
  SyncClient& operator=(const SyncClient&) = delete;

  std::string Ping();
  std::optional<std::string> Get(std::string_view key);
  // False when NX/XX did not hold.
  bool Set(std::string_view key, std::string_view value, SetOptions options = {});
  int64_t Del(std::string_view key);
  bool Exists(std::string_view key);
  int64_t Incr(std::string_view key, int64_t delta = 1, uint64_t ttl_on_create_ms = 0);
  bool Expire(std::string_view key, uint64_t ttl_ms, uint8_t flags = 0);
  // The fencing token, or nullopt when another owner holds the lock.
  std::optional<int64_t> Lock(std::string_view key, std::string_view owner, uint64_t ttl_ms);
  bool Unlock(std::string_view key, std::string_view owner);
  bool Extend(std::string_view key, std::string_view owner, uint64_t ttl_ms);
  ThrottleResult Throttle(std::string_view key, uint64_t max_burst, uint64_t count,
                          uint64_t period_s, uint64_t quantity = 1);
  FixedWindowResult FixedWindow(std::string_view key, uint64_t limit, uint64_t window_ms,
                                uint64_t cost = 1);
  int64_t Publish(std::string_view channel, std::string_view message);
  // `on_event` runs on the client's thread. Returns the subscription id.
  uint32_t Subscribe(std::string_view channel, EventHandler on_event, bool pattern = false);
  void Unsubscribe(uint32_t subscription_id);
  // Any RESP command; returns the RESP reply bytes (error replies included, as bytes).
  std::string Command(const std::vector<std::string>& args);
  // The server's TOPOLOGY: its cluster view, or its own shards on a single node.
  client::Topology Topology();

  // Runs `fn` on the client's thread against the connection and waits for its Result.
  Result Call(std::function<void(Connection&, Handler)> fn);
  Stats stats();

 private:
  Result CallOrThrow(std::function<void(Connection&, Handler)> fn);

  Options options_;
  std::unique_ptr<Router> router_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::shared_ptr<Connection> connection_;
  std::thread thread_;
};

// Decoding helpers for Result bodies.
int64_t BodyInt(const Result& r);

}  // namespace keep::client
