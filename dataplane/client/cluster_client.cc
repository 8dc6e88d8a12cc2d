#include "dataplane/client/cluster_client.h"

#include <algorithm>
#include <charconv>

namespace keep::client {

namespace asio = boost::asio;
namespace bin = proto::binary;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

Error ClosedError() {
  return Error(ErrorKind::kConnection, Status::kError, "cluster client closed");
}

Result Failed(Error error) {
  Status status = error.status();
  return Result{std::move(error), status, {}};
}

// The integer of a RESP ":<n>\r\n" reply, as COMMAND returns CLUSTER KEYSLOT's.
std::optional<int64_t> RespInteger(std::string_view resp) {
  if (resp.size() < 4 || resp[0] != ':' || !resp.ends_with("\r\n")) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(resp.data() + 1, resp.data() + resp.size() - 2, value);
  if (ec != std::errc() || end != resp.data() + resp.size() - 2) return std::nullopt;
  return value;
}

// Keys whose slots tell the slot functions apart: a match on all of them by chance is 2^-42.
constexpr std::string_view kProbeKeys[] = {"libkeep:probe:a", "libkeep:probe:b",
                                           "{libkeep}:probe:c"};

}  // namespace

std::shared_ptr<ClusterClient> ClusterClient::Create(asio::io_context& io, ClusterOptions options) {
  return std::shared_ptr<ClusterClient>(new ClusterClient(io, std::move(options)));
}

ClusterClient::ClusterClient(asio::io_context& io, ClusterOptions options)
    : io_(io), options_(std::move(options)), router_(options_.seeds), refresh_timer_(io) {
  // BUSY is retried here, against the whole request's budget, rather than by each connection.
  options_.connection.busy_retries = 0;
}

ClusterClient::~ClusterClient() = default;

std::shared_ptr<Connection> ClusterClient::ConnectionTo(const Endpoint& endpoint) {
  std::string name = endpoint.host + ":" + std::to_string(endpoint.port);
  auto it = pool_.find(name);
  if (it != pool_.end() && !it->second->closed()) return it->second;
  Options o = options_.connection;
  o.host = endpoint.host;
  o.port = endpoint.port;
  auto connection = Connection::Create(io_, std::move(o));
  // A failed connect fails the requests queued on it, which retry from OnResult.
  connection->AsyncConnect([](std::optional<Error>) {});
  pool_[name] = connection;
  return connection;
}

void ClusterClient::AsyncStart(std::function<void(std::optional<Error>)> done) {
  if (closed_) {
    if (done) done(ClosedError());
    return;
  }
  if (started_) {
    if (done) done(std::nullopt);
    return;
  }
  if (done) {
    auto previous = std::move(start_done_);
    start_done_ = [previous = std::move(previous), done = std::move(done)](auto error) {
      if (previous) previous(error);
      done(error);
    };
  }
  if (starting_) return;
  starting_ = true;
  auto self = shared_from_this();
  size_t asked = router_.TopologySources().size();
  Refresh([this, self, asked] {
    if (closed_) return;
    auto second_round = [this, self] {
      if (closed_) return;
      if (!router_.has_view()) {
        starting_ = false;
        std::string seeds;
        for (const auto& s : options_.seeds) {
          seeds += (seeds.empty() ? "" : ", ") + s.host + ":" + std::to_string(s.port);
        }
        Error error(ErrorKind::kConnection, Status::kError,
                    "no seed answered TOPOLOGY (" + (seeds.empty() ? "no seeds" : seeds) + ")" +
                        (last_refresh_error_.empty() ? "" : ": " + last_refresh_error_));
        auto waiting = std::move(waiting_);
        waiting_.clear();
        for (auto& r : waiting) r->handler(Failed(error));
        if (auto done = std::move(start_done_)) {
          start_done_ = nullptr;
          done(error);
        }
        return;
      }
      DetectSlotFunction([this, self] { FinishStart(); });
    };
    // The seeds named the members; the majority is counted over all of them.
    if (router_.has_view() && router_.TopologySources().size() > asked) {
      Refresh(second_round);
    } else {
      second_round();
    }
  });
}

void ClusterClient::FinishStart() {
  if (closed_) return;
  started_ = true;
  starting_ = false;
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& r : waiting) Dispatch(r);
  if (auto done = std::move(start_done_)) {
    start_done_ = nullptr;
    done(std::nullopt);
  }
}

void ClusterClient::DetectSlotFunction(std::function<void()> done) {
  switch (options_.slot_mode) {
    case SlotMode::kKeyed:
      router_.SetSlotFunction(core::SlotFunction(core::SlotHash::kKeyed, options_.slot_secret));
      slot_mode_ = SlotMode::kKeyed;
      return done();
    case SlotMode::kCrc16:
      router_.SetSlotFunction(core::SlotFunction(core::SlotHash::kCrc16, ""));
      slot_mode_ = SlotMode::kCrc16;
      return done();
    case SlotMode::kNone:
      router_.SetSlotFunction(std::nullopt);
      slot_mode_ = SlotMode::kNone;
      return done();
    case SlotMode::kDetect:
      break;
  }
  struct Probe {
    std::vector<std::optional<int64_t>> slots;
    size_t outstanding = 0;
  };
  auto probe = std::make_shared<Probe>();
  probe->slots.resize(std::size(kProbeKeys));
  probe->outstanding = std::size(kProbeKeys);
  auto self = shared_from_this();
  auto finish = [this, self, probe, done = std::move(done)] {
    if (closed_) return;
    std::vector<std::pair<SlotMode, core::SlotFunction>> candidates;
    if (!options_.slot_secret.empty()) {
      candidates.emplace_back(SlotMode::kKeyed,
                              core::SlotFunction(core::SlotHash::kKeyed, options_.slot_secret));
    }
    candidates.emplace_back(SlotMode::kCrc16, core::SlotFunction(core::SlotHash::kCrc16, ""));
    slot_mode_ = SlotMode::kNone;
    router_.SetSlotFunction(std::nullopt);
    for (const auto& [mode, fn] : candidates) {
      bool all = true;
      for (size_t i = 0; i < std::size(kProbeKeys); ++i) {
        all = all && probe->slots[i] && *probe->slots[i] == static_cast<int64_t>(fn(kProbeKeys[i]));
      }
      if (all) {
        slot_mode_ = mode;
        router_.SetSlotFunction(fn);
        break;
      }
    }
    done();
  };
  // CLUSTER KEYSLOT answers on any member without redirecting, whatever the slot's owner.
  auto connection = ConnectionTo(router_.Anywhere());
  for (size_t i = 0; i < std::size(kProbeKeys); ++i) {
    connection->AsyncCommand({"CLUSTER", "KEYSLOT", std::string(kProbeKeys[i])},
                             [probe, i, finish](Result r) {
                               if (r.ok()) probe->slots[i] = RespInteger(r.body);
                               if (--probe->outstanding == 0) finish();
                             });
  }
}

void ClusterClient::Close() {
  if (closed_) return;
  closed_ = true;
  refresh_timer_.cancel();
  if (gather_timer_) gather_timer_->cancel();
  for (auto& [id, timer] : retry_timers_) timer->cancel();
  auto pool = std::move(pool_);
  pool_.clear();
  for (auto& [name, connection] : pool) connection->Close();
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& r : waiting) r->handler(Failed(ClosedError()));
  if (auto done = std::move(start_done_)) {
    start_done_ = nullptr;
    done(ClosedError());
  }
}

void ClusterClient::Execute(std::string_view key, Op op, Handler h) {
  auto r = std::make_shared<Request>();
  r->key = std::string(key);
  r->op = std::move(op);
  r->handler = std::move(h);
  Submit(std::move(r));
}

void ClusterClient::ExecuteAnywhere(Op op, Handler h) {
  auto r = std::make_shared<Request>();
  r->op = std::move(op);
  r->handler = std::move(h);
  Submit(std::move(r));
}

void ClusterClient::Submit(RequestPtr r) {
  if (closed_) {
    r->handler(Failed(ClosedError()));
    return;
  }
  r->deadline = Clock::now() + options_.retry_budget;
  if (!started_) {
    waiting_.push_back(std::move(r));
    AsyncStart(nullptr);
    return;
  }
  Dispatch(std::move(r));
}

void ClusterClient::Dispatch(RequestPtr r) {
  if (closed_) {
    r->handler(Failed(ClosedError()));
    return;
  }
  Endpoint target;
  if (r->target) {
    target = std::move(*r->target);
    r->target.reset();
  } else {
    target = r->key ? router_.Route(*r->key) : router_.Anywhere();
  }
  ++r->attempts;
  auto connection = ConnectionTo(target);
  auto self = shared_from_this();
  r->op(*connection, [this, self, r](Result result) { OnResult(r, std::move(result)); });
}

void ClusterClient::OnResult(RequestPtr r, Result result) {
  if (closed_ || result.ok()) {
    r->handler(std::move(result));
    return;
  }
  const Error& e = *result.error;
  auto backoff = std::min<milliseconds>(options_.min_backoff * (1 << std::min(r->attempts - 1, 16)),
                                        options_.max_backoff);
  if (e.kind() == ErrorKind::kConnection) {
    ++stats_.connection_retries;
    RequestRefresh();
    RetryAfter(r, backoff, e);
    return;
  }
  if (e.kind() != ErrorKind::kServer) {
    r->handler(std::move(result));
    return;
  }
  switch (e.status()) {
    case Status::kMoved: {
      bin::Moved moved;
      if (!bin::ParseMoved(result.body, &moved)) break;
      if (++r->redirects > options_.max_redirects) {
        GiveUp(r, e, std::to_string(options_.max_redirects) + " MOVED in a row");
        return;
      }
      if (Clock::now() >= r->deadline) {
        GiveUp(r, e, "retry budget spent");
        return;
      }
      ++stats_.moved;
      router_.OnMoved(moved);
      r->target = Endpoint{std::string(moved.host), moved.port};
      RequestRefresh();
      // Posted: the reply came from inside a connection's read loop.
      asio::post(io_, [this, self = shared_from_this(), r] { Dispatch(r); });
      return;
    }
    case Status::kBusy:
      ++stats_.busy_retries;
      RetryAfter(r, std::max(backoff, milliseconds(e.retry_after_ms())), e);
      return;
    case Status::kFenced:
      ++stats_.fenced_retries;
      RequestRefresh();
      RetryAfter(r, backoff, e);
      return;
    default:
      break;
  }
  r->handler(std::move(result));
}

void ClusterClient::RetryAfter(RequestPtr r, milliseconds delay, const Error& last) {
  if (Clock::now() + delay > r->deadline) {
    GiveUp(r, last, "retry budget spent");
    return;
  }
  uint64_t id = next_timer_id_++;
  auto timer = std::make_shared<asio::steady_timer>(io_, delay);
  retry_timers_[id] = timer;
  timer->async_wait([this, self = shared_from_this(), r, id](boost::system::error_code ec) {
    retry_timers_.erase(id);
    if (ec || closed_) {
      r->handler(Failed(ClosedError()));
      return;
    }
    Dispatch(r);
  });
}

void ClusterClient::GiveUp(RequestPtr r, const Error& last, const std::string& why) {
  ++stats_.unavailable;
  r->handler(Failed(Error(
      ErrorKind::kUnavailable, last.status(),
      "gave up after " + std::to_string(r->attempts) + " attempts (" + why + "): " + last.message(),
      last.retry_after_ms())));
}

void ClusterClient::RequestRefresh() {
  if (closed_ || !started_) return;
  if (refreshing_) {
    // The refresh in flight may have asked before the change this request ran into.
    refresh_again_ = true;
    return;
  }
  auto due = last_refresh_ + options_.refresh_interval;
  if (Clock::now() >= due) {
    Refresh(nullptr);
    return;
  }
  if (refresh_armed_) return;
  refresh_armed_ = true;
  refresh_timer_.expires_at(due);
  refresh_timer_.async_wait([this, self = shared_from_this()](boost::system::error_code ec) {
    refresh_armed_ = false;
    if (!ec && !closed_ && !refreshing_) Refresh(nullptr);
  });
}

void ClusterClient::Refresh(std::function<void()> done) {
  // The first fetch waits as long as connecting and a request may take; later ones go on with
  // the members that answered quickly.
  auto timeout = started_ ? options_.refresh_timeout
                          : options_.connection.connect_timeout + options_.connection.timeout;
  if (done) refresh_waiters_.push_back(std::move(done));
  if (refreshing_ || closed_) return;
  refreshing_ = true;
  refresh_again_ = false;
  struct Gather {
    std::vector<Topology> reports;
    std::string error;  // the last failure, for a start that found no member
    size_t outstanding = 0;
    bool finished = false;
  };
  auto gather = std::make_shared<Gather>();
  auto self = shared_from_this();
  auto finish = [this, self, gather] {
    if (gather->finished || closed_) return;
    gather->finished = true;
    if (gather_timer_) gather_timer_->cancel();
    bool changed = false;
    bool had_view = router_.has_view();
    if (router_.Adopt(gather->reports, &changed) && changed && had_view) ++stats_.view_changes;
    ++stats_.refreshes;
    if (gather->reports.empty()) last_refresh_error_ = gather->error;
    refreshing_ = false;
    last_refresh_ = Clock::now();
    auto waiters = std::move(refresh_waiters_);
    refresh_waiters_.clear();
    for (auto& w : waiters) w();
    if (refresh_again_) RequestRefresh();
  };
  std::vector<Endpoint> sources = router_.TopologySources();
  gather->outstanding = sources.size();
  gather_timer_ = std::make_shared<asio::steady_timer>(io_, timeout);
  gather_timer_->async_wait([finish](boost::system::error_code ec) {
    if (!ec) finish();
  });
  if (sources.empty()) {
    finish();
    return;
  }
  for (const Endpoint& source : sources) {
    ConnectionTo(source)->AsyncTopology([gather, finish](Result r) {
      Topology t;
      if (r.ok() && ParseTopologyBody(r.body, &t)) {
        gather->reports.push_back(std::move(t));
      } else {
        gather->error = r.ok() ? "malformed TOPOLOGY reply" : r.error->message();
      }
      if (--gather->outstanding == 0) finish();
    });
  }
}

// ---- typed helpers: each captures what it sends, since a retry sends it again ----

void ClusterClient::AsyncPing(Handler h) {
  ExecuteAnywhere([](Connection& c, Handler done) { c.AsyncPing(std::move(done)); }, std::move(h));
}
void ClusterClient::AsyncGet(std::string_view key, Handler h) {
  Execute(
      key, [k = std::string(key)](Connection& c, Handler done) { c.AsyncGet(k, std::move(done)); },
      std::move(h));
}
void ClusterClient::AsyncSet(std::string_view key, std::string_view value, uint64_t ttl_ms,
                             uint8_t flags, Handler h) {
  Execute(
      key,
      [k = std::string(key), v = std::string(value), ttl_ms, flags](Connection& c, Handler done) {
        c.AsyncSet(k, v, ttl_ms, flags, std::move(done));
      },
      std::move(h));
}
void ClusterClient::AsyncDel(std::string_view key, Handler h) {
  Execute(
      key, [k = std::string(key)](Connection& c, Handler done) { c.AsyncDel(k, std::move(done)); },
      std::move(h));
}
void ClusterClient::AsyncExists(std::string_view key, Handler h) {
  Execute(
      key,
      [k = std::string(key)](Connection& c, Handler done) { c.AsyncExists(k, std::move(done)); },
      std::move(h));
}
void ClusterClient::AsyncIncr(std::string_view key, int64_t delta, uint64_t ttl_on_create_ms,
                              Handler h) {
  Execute(
      key,
      [k = std::string(key), delta, ttl_on_create_ms](Connection& c, Handler done) {
        c.AsyncIncr(k, delta, ttl_on_create_ms, std::move(done));
      },
      std::move(h));
}
void ClusterClient::AsyncExpire(std::string_view key, uint64_t ttl_ms, uint8_t flags, Handler h) {
  Execute(
      key,
      [k = std::string(key), ttl_ms, flags](Connection& c, Handler done) {
        c.AsyncExpire(k, ttl_ms, flags, std::move(done));
      },
      std::move(h));
}
void ClusterClient::AsyncLock(std::string_view key, std::string_view owner, uint64_t ttl_ms,
                              Handler h) {
  Execute(
      key,
      [k = std::string(key), o = std::string(owner), ttl_ms](Connection& c, Handler done) {
        c.AsyncLock(k, o, ttl_ms, std::move(done));
      },
      std::move(h));
}
void ClusterClient::AsyncUnlock(std::string_view key, std::string_view owner, Handler h) {
  Execute(
      key,
      [k = std::string(key), o = std::string(owner)](Connection& c, Handler done) {
        c.AsyncUnlock(k, o, std::move(done));
      },
      std::move(h));
}
void ClusterClient::AsyncExtend(std::string_view key, std::string_view owner, uint64_t ttl_ms,
                                Handler h) {
  Execute(
      key,
      [k = std::string(key), o = std::string(owner), ttl_ms](Connection& c, Handler done) {
        c.AsyncExtend(k, o, ttl_ms, std::move(done));
      },
      std::move(h));
}
void ClusterClient::AsyncThrottle(std::string_view key, uint64_t max_burst, uint64_t count,
                                  uint64_t period_s, uint64_t quantity, Handler h) {
  Execute(
      key,
      [k = std::string(key), max_burst, count, period_s, quantity](Connection& c, Handler done) {
        c.AsyncThrottle(k, max_burst, count, period_s, quantity, std::move(done));
      },
      std::move(h));
}
void ClusterClient::AsyncFixedWindow(std::string_view key, uint64_t limit, uint64_t window_ms,
                                     uint64_t cost, Handler h) {
  Execute(
      key,
      [k = std::string(key), limit, window_ms, cost](Connection& c, Handler done) {
        c.AsyncFixedWindow(k, limit, window_ms, cost, std::move(done));
      },
      std::move(h));
}
void ClusterClient::AsyncCommand(const std::vector<std::string>& args, Handler h) {
  Op op = [args](Connection& c, Handler done) { c.AsyncCommand(args, std::move(done)); };
  if (args.size() > 1) {
    Execute(args[1], std::move(op), std::move(h));
  } else {
    ExecuteAnywhere(std::move(op), std::move(h));
  }
}

}  // namespace keep::client
