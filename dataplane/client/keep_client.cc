#include "dataplane/client/keep_client.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

namespace keep::client {

namespace asio = boost::asio;
namespace bin = proto::binary;
using asio::ip::tcp;

namespace {

constexpr size_t kReadChunk = 64 * 1024;

bool IsOrdinary(Status s) { return s == Status::kOk || s == Status::kNil || s == Status::kLocked; }

Error ServerError(const bin::ReplyView& reply) {
  uint32_t retry = 0;
  std::string text;
  if (reply.status == Status::kBusy) {
    bin::ParseBusy(reply.body, &retry);
    text = "BUSY retry after " + std::to_string(retry) + " ms";
  } else if (reply.status == Status::kMoved) {
    bin::Moved m;
    if (bin::ParseMoved(reply.body, &m)) {
      text = "MOVED " + std::to_string(m.slot) + " " + std::string(m.host) + ":" +
             std::to_string(m.port) + " (view epoch " + std::to_string(m.view_epoch) + ")";
    } else {
      text = "MOVED";
    }
  } else if (reply.status == Status::kLocked) {
    text = "LOCKED";
  } else {
    text.assign(reply.body);
    if (text.empty()) text = std::string(bin::StatusName(reply.status));
  }
  return Error(ErrorKind::kServer, reply.status, std::move(text), retry);
}

}  // namespace

std::string HelloProof(std::string_view secret, std::string_view nonce) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(nonce.data()), nonce.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

int64_t BodyInt(const Result& r) {
  int64_t v = 0;
  if (!bin::ParseInt(r.body, &v)) {
    throw Error(ErrorKind::kProtocol, Status::kError, "expected an integer reply body");
  }
  return v;
}

// ---- Connection ----

std::shared_ptr<Connection> Connection::Create(asio::io_context& io, Options options) {
  return std::shared_ptr<Connection>(new Connection(io, std::move(options)));
}

Connection::Connection(asio::io_context& io, Options options)
    : io_(io),
      options_(std::move(options)),
      socket_(io),
      resolver_(io),
      sweep_(io),
      connect_timer_(io),
      decoder_(bin::Limits{}) {
  read_buf_.resize(kReadChunk);
}

Connection::~Connection() = default;

uint32_t Connection::NextId() {
  // Skip 0 (reserved) and ids still in use by a request or a subscription after wrap-around.
  do {
    ++next_id_;
  } while (next_id_ == 0 || pending_.count(next_id_) || subscriptions_.count(next_id_));
  return next_id_;
}

void Connection::AsyncConnect(std::function<void(std::optional<Error>)> done) {
  connect_done_ = std::move(done);
  auto self = shared_from_this();
  connect_timer_.expires_after(options_.connect_timeout);
  connect_timer_.async_wait([this, self](boost::system::error_code ec) {
    if (ec || ready_ || closed_) return;
    FinishConnect(Error(ErrorKind::kTimeout, Status::kError, "connect timed out"));
  });
  resolver_.async_resolve(
      options_.host, std::to_string(options_.port),
      [this, self](boost::system::error_code ec, tcp::resolver::results_type results) {
        if (closed_) return;
        if (ec) {
          FinishConnect(Error(ErrorKind::kConnection, Status::kError,
                              "resolve " + options_.host + ": " + ec.message()));
          return;
        }
        asio::async_connect(
            socket_, results, [this, self](boost::system::error_code ec, const tcp::endpoint&) {
              if (closed_) return;
              if (ec) {
                FinishConnect(Error(ErrorKind::kConnection, Status::kError,
                                    "connect " + options_.host + ":" +
                                        std::to_string(options_.port) + ": " + ec.message()));
                return;
              }
              socket_.set_option(tcp::no_delay(true));
              // The preface goes first; HELLO follows once the server preface (nonce) arrives.
              std::string preface;
              bin::AppendPreface(&preface);
              write_buf_ = std::move(preface);
              writing_ = true;
              asio::async_write(socket_, asio::buffer(write_buf_),
                                [this, self](boost::system::error_code ec, size_t) {
                                  writing_ = false;
                                  if (ec) {
                                    FinishConnect(Error(ErrorKind::kConnection, Status::kError,
                                                        "write: " + ec.message()));
                                    return;
                                  }
                                  StartWrite();
                                });
              StartRead();
            });
      });
}

void Connection::FinishConnect(std::optional<Error> error) {
  if (error) {
    FailAll(*error);
  } else {
    ready_ = true;
    connect_timer_.cancel();
  }
  if (connect_done_) {
    auto done = std::move(connect_done_);
    connect_done_ = nullptr;
    done(std::move(error));
  }
}

void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  resolver_.cancel();
  sweep_.cancel();
  FailAll(Error(ErrorKind::kConnection, Status::kError, "connection closed"));
}

void Connection::FailAll(const Error& error) {
  closed_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
  // Nothing may keep the io_context alive after the connection is gone.
  resolver_.cancel();
  sweep_.cancel();
  connect_timer_.cancel();
  auto pending = std::move(pending_);
  pending_.clear();
  subscriptions_.clear();
  queued_.clear();
  queued_sizes_.clear();
  for (auto& [id, p] : pending) p.handler(Result{error, Status::kError, {}});
  if (connect_done_) {
    auto done = std::move(connect_done_);
    connect_done_ = nullptr;
    done(error);
  }
}

void Connection::Send(Encoder encode, Handler handler) {
  if (closed_) {
    handler(Result{
        Error(ErrorKind::kConnection, Status::kError, "connection closed"), Status::kError, {}});
    return;
  }
  uint32_t id = NextId();
  Pending p;
  encode(&p.frame, id);
  p.handler = std::move(handler);
  p.deadline = std::chrono::steady_clock::now() + options_.timeout;
  Enqueue(p.frame);
  pending_.emplace(id, std::move(p));
  ArmSweep();
}

void Connection::Enqueue(std::string_view frame) {
  queued_.append(frame);
  queued_sizes_.push_back(frame.size());
  // Nothing waits for company: with no write in flight the request leaves now, alone if need be.
  if (!writing_ && hello_queued_) StartWrite();
}

void Connection::StartWrite() {
  if (writing_ || !hello_queued_ || queued_sizes_.empty() || closed_) return;
  size_t frames = 0;
  size_t bytes = 0;
  const size_t max_frames = options_.batching ? options_.max_batch_requests : 1;
  while (frames < queued_sizes_.size() && frames < max_frames) {
    size_t next = queued_sizes_[frames];
    if (frames > 0 && bytes + next > options_.max_batch_bytes) break;
    bytes += next;
    ++frames;
  }
  write_buf_.assign(queued_, 0, bytes);
  queued_.erase(0, bytes);
  queued_sizes_.erase(queued_sizes_.begin(), queued_sizes_.begin() + frames);
  writing_ = true;
  ++stats_.writes;
  stats_.requests_written += frames;
  auto self = shared_from_this();
  asio::async_write(
      socket_, asio::buffer(write_buf_), [this, self](boost::system::error_code ec, size_t) {
        writing_ = false;
        if (closed_) return;
        if (ec) {
          FailAll(Error(ErrorKind::kConnection, Status::kError, "write: " + ec.message()));
          return;
        }
        StartWrite();
      });
}

void Connection::StartRead() {
  if (read_buf_.size() - read_len_ < kReadChunk / 4) read_buf_.resize(read_len_ + kReadChunk);
  auto self = shared_from_this();
  socket_.async_read_some(
      asio::buffer(read_buf_.data() + read_len_, read_buf_.size() - read_len_),
      [this, self](boost::system::error_code ec, size_t n) {
        if (closed_) return;
        if (ec) {
          FailAll(Error(
              ErrorKind::kConnection, Status::kError,
              ec == asio::error::eof ? "connection closed by server" : "read: " + ec.message()));
          return;
        }
        read_len_ += n;
        size_t offset = 0;
        while (!closed_) {
          std::string_view data(read_buf_.data() + offset, read_len_ - offset);
          bin::ReplyView reply;
          size_t consumed = 0;
          bin::DecodeStatus s = decoder_.DecodeReply(data, &reply, &consumed);
          if (s == bin::DecodeStatus::kIncomplete) {
            if (decoder_.needed() > read_buf_.size() - offset) {
              read_buf_.resize(decoder_.needed() + offset);
            }
            break;
          }
          if (s != bin::DecodeStatus::kComplete) {
            FailAll(Error(ErrorKind::kProtocol, Status::kError, decoder_.error()));
            return;
          }
          OnFrame(reply);
          offset += consumed;
        }
        if (closed_) return;
        std::copy(read_buf_.begin() + offset, read_buf_.begin() + read_len_, read_buf_.begin());
        read_len_ -= offset;
        StartRead();
      });
}

void Connection::OnServerPreface(const bin::ReplyView& reply) {
  bin::ServerPreface preface;
  if (!bin::ParseServerPreface(reply.body, &preface)) {
    FinishConnect(Error(ErrorKind::kProtocol, Status::kError, "malformed server preface"));
    return;
  }
  std::string proof;
  if (!options_.secret.empty()) proof = HelloProof(options_.secret, preface.nonce);
  hello_id_ = NextId();
  Pending p;
  bin::EncodeHello(&p.frame, hello_id_, options_.client_name, proof);
  p.deadline = std::chrono::steady_clock::now() + options_.connect_timeout;
  p.handler = [this](Result r) {
    if (!r.ok()) {
      FinishConnect(std::move(r.error));
      return;
    }
    bin::HelloReply hello;
    if (bin::ParseHelloReply(r.body, &hello)) client_id_ = hello.client_id;
    FinishConnect(std::nullopt);
  };
  // HELLO jumps the queue: requests issued during connect follow it in the same stream, so the
  // server has authenticated the connection by the time it reads them.
  queued_.insert(0, p.frame);
  queued_sizes_.push_front(p.frame.size());
  pending_.emplace(hello_id_, std::move(p));
  hello_queued_ = true;
  StartWrite();
}

void Connection::OnFrame(const bin::ReplyView& reply) {
  if (reply.id == bin::kConnectionId) {
    if (reply.flags & bin::kReplyPreface) {
      OnServerPreface(reply);
    } else {
      FailAll(Error(ErrorKind::kServer, reply.status, std::string(reply.body)));
    }
    return;
  }
  if (reply.flags & bin::kReplyEvent) {
    auto it = subscriptions_.find(reply.id);
    bin::Event event;
    if (it != subscriptions_.end() && bin::ParseEvent(reply, &event)) it->second(event);
    return;
  }
  auto it = pending_.find(reply.id);
  if (it == pending_.end()) return;  // timed out earlier: the late reply is dropped
  if (reply.status == Status::kBusy && it->second.attempts < options_.busy_retries) {
    uint32_t retry = 0;
    bin::ParseBusy(reply.body, &retry);
    RetryLater(reply.id, retry);
    return;
  }
  Result r;
  r.status = reply.status;
  r.body.assign(reply.body);
  if (!IsOrdinary(reply.status)) r.error = ServerError(reply);
  Complete(reply.id, std::move(r));
}

void Connection::RetryLater(uint32_t id, uint32_t retry_after_ms) {
  Pending& p = pending_.at(id);
  ++stats_.busy_retries;
  auto backoff = options_.busy_backoff * (1 << std::min(p.attempts, 16));
  backoff = std::max<std::chrono::milliseconds>(backoff, std::chrono::milliseconds(retry_after_ms));
  backoff = std::min(backoff, options_.max_backoff);
  ++p.attempts;
  auto timer = std::make_shared<asio::steady_timer>(io_, backoff);
  auto self = shared_from_this();
  timer->async_wait([this, self, timer, id](boost::system::error_code ec) {
    if (ec || closed_) return;
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Enqueue(it->second.frame);
  });
}

void Connection::Complete(uint32_t id, Result result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Handler handler = std::move(it->second.handler);
  pending_.erase(it);
  handler(std::move(result));
}

void Connection::ArmSweep() {
  if (sweep_armed_ || closed_ || pending_.empty()) return;
  sweep_armed_ = true;
  // Deadlines are checked on a coarse tick rather than with a timer per request.
  auto tick = std::clamp<std::chrono::milliseconds>(
      options_.timeout / 8, std::chrono::milliseconds(1), std::chrono::milliseconds(50));
  sweep_.expires_after(tick);
  auto self = shared_from_this();
  sweep_.async_wait([this, self](boost::system::error_code ec) {
    sweep_armed_ = false;
    if (ec || closed_) return;
    auto now = std::chrono::steady_clock::now();
    std::vector<uint32_t> expired;
    for (auto& [id, p] : pending_) {
      if (p.deadline <= now) expired.push_back(id);
    }
    for (uint32_t id : expired) {
      bool was_hello = id == hello_id_ && !ready_;
      Complete(id, Result{Error(ErrorKind::kTimeout, Status::kError, "request timed out"),
                          Status::kError,
                          {}});
      if (was_hello) return;
    }
    ArmSweep();
  });
}

void Connection::AsyncPing(Handler h) {
  Send([](std::string* out, uint32_t id) { bin::EncodePing(out, id); }, std::move(h));
}
void Connection::AsyncGet(std::string_view key, Handler h) {
  Send([key](std::string* out, uint32_t id) { bin::EncodeGet(out, id, key); }, std::move(h));
}
void Connection::AsyncSet(std::string_view key, std::string_view value, uint64_t ttl_ms,
                          uint8_t flags, Handler h) {
  Send([=](std::string* out, uint32_t id) { bin::EncodeSet(out, id, key, value, ttl_ms, flags); },
       std::move(h));
}
void Connection::AsyncDel(std::string_view key, Handler h) {
  Send([key](std::string* out, uint32_t id) { bin::EncodeDel(out, id, key); }, std::move(h));
}
void Connection::AsyncExists(std::string_view key, Handler h) {
  Send([key](std::string* out, uint32_t id) { bin::EncodeExists(out, id, key); }, std::move(h));
}
void Connection::AsyncIncr(std::string_view key, int64_t delta, uint64_t ttl_on_create_ms,
                           Handler h) {
  Send([=](std::string* out,
           uint32_t id) { bin::EncodeIncr(out, id, key, delta, ttl_on_create_ms); },
       std::move(h));
}
void Connection::AsyncExpire(std::string_view key, uint64_t ttl_ms, uint8_t flags, Handler h) {
  Send([=](std::string* out, uint32_t id) { bin::EncodeExpire(out, id, key, ttl_ms, flags); },
       std::move(h));
}
void Connection::AsyncLock(std::string_view key, std::string_view owner, uint64_t ttl_ms,
                           Handler h) {
  Send([=](std::string* out, uint32_t id) { bin::EncodeLock(out, id, key, owner, ttl_ms); },
       std::move(h));
}
void Connection::AsyncUnlock(std::string_view key, std::string_view owner, Handler h) {
  Send([=](std::string* out, uint32_t id) { bin::EncodeUnlock(out, id, key, owner); },
       std::move(h));
}
void Connection::AsyncExtend(std::string_view key, std::string_view owner, uint64_t ttl_ms,
                             Handler h) {
  Send([=](std::string* out, uint32_t id) { bin::EncodeExtend(out, id, key, owner, ttl_ms); },
       std::move(h));
}
void Connection::AsyncThrottle(std::string_view key, uint64_t max_burst, uint64_t count,
                               uint64_t period_s, uint64_t quantity, Handler h) {
  Send(
      [=](std::string* out, uint32_t id) {
        bin::EncodeThrottle(out, id, key, max_burst, count, period_s, quantity);
      },
      std::move(h));
}
void Connection::AsyncFixedWindow(std::string_view key, uint64_t limit, uint64_t window_ms,
                                  uint64_t cost, Handler h) {
  Send([=](std::string* out,
           uint32_t id) { bin::EncodeFixedWindow(out, id, key, limit, window_ms, cost); },
       std::move(h));
}
void Connection::AsyncPublish(std::string_view channel, std::string_view message, Handler h) {
  Send([=](std::string* out, uint32_t id) { bin::EncodePublish(out, id, channel, message); },
       std::move(h));
}
void Connection::AsyncTopology(Handler h) {
  Send([](std::string* out, uint32_t id) { bin::EncodeTopology(out, id); }, std::move(h));
}
void Connection::AsyncCommand(const std::vector<std::string>& args, Handler h) {
  Send(
      [&args](std::string* out, uint32_t id) {
        std::vector<std::string_view> views(args.begin(), args.end());
        bin::EncodeCommand(out, id, views);
      },
      std::move(h));
}
uint32_t Connection::AsyncSubscribe(std::string_view channel, bool pattern, EventHandler on_event,
                                    Handler done) {
  uint32_t sub_id = 0;
  Send(
      [&](std::string* out, uint32_t id) {
        sub_id = id;
        bin::EncodeSubscribe(out, id, channel, pattern);
      },
      std::move(done));
  if (sub_id == 0) return 0;  // the connection is closed; `done` has run
  subscriptions_[sub_id] = std::move(on_event);
  // A failed SUBSCRIBE must not leave its event handler behind.
  Pending& p = pending_.at(sub_id);
  p.handler = [this, sub_id, inner = std::move(p.handler)](Result r) {
    if (!r.ok()) subscriptions_.erase(sub_id);
    inner(std::move(r));
  };
  return sub_id;
}
void Connection::AsyncUnsubscribe(uint32_t subscription_id, Handler h) {
  Send([subscription_id](std::string* out,
                         uint32_t id) { bin::EncodeUnsubscribe(out, id, subscription_id); },
       [this, subscription_id, h = std::move(h)](Result r) {
         if (r.ok()) subscriptions_.erase(subscription_id);
         h(std::move(r));
       });
}

// ---- SyncClient ----

SyncClient::SyncClient(Options options)
    : options_(std::move(options)),
      router_(std::make_unique<SingleEndpointRouter>(Endpoint{options_.host, options_.port})),
      work_(asio::make_work_guard(io_)) {
  connection_ = Connection::Create(io_, options_);
  thread_ = std::thread([this] { io_.run(); });
  std::promise<std::optional<Error>> connected;
  auto future = connected.get_future();
  asio::post(io_, [&] {
    connection_->AsyncConnect(
        [&connected](std::optional<Error> e) { connected.set_value(std::move(e)); });
  });
  std::optional<Error> error = future.get();
  if (error) {
    asio::post(io_, [this] { connection_->Close(); });
    work_.reset();
    thread_.join();
    throw *error;
  }
}

SyncClient::~SyncClient() {
  asio::post(io_, [this] { connection_->Close(); });
  work_.reset();
  if (thread_.joinable()) thread_.join();
}

Result SyncClient::Call(std::function<void(Connection&, Handler)> fn) {
  auto promise = std::make_shared<std::promise<Result>>();
  auto future = promise->get_future();
  asio::post(io_, [this, fn = std::move(fn), promise] {
    fn(*connection_, [promise](Result r) { promise->set_value(std::move(r)); });
  });
  return future.get();
}

Result SyncClient::CallOrThrow(std::function<void(Connection&, Handler)> fn) {
  Result r = Call(std::move(fn));
  if (!r.ok()) throw *r.error;
  return r;
}

Stats SyncClient::stats() {
  std::promise<Stats> p;
  auto f = p.get_future();
  asio::post(io_, [&] { p.set_value(connection_->stats()); });
  return f.get();
}

std::string SyncClient::Ping() {
  return CallOrThrow([](Connection& c, Handler h) { c.AsyncPing(std::move(h)); }).body;
}

std::optional<std::string> SyncClient::Get(std::string_view key) {
  Result r = CallOrThrow([key](Connection& c, Handler h) { c.AsyncGet(key, std::move(h)); });
  if (r.status == Status::kNil) return std::nullopt;
  return std::move(r.body);
}

bool SyncClient::Set(std::string_view key, std::string_view value, SetOptions o) {
  uint8_t flags =
      (o.nx ? bin::kSetNx : 0) | (o.xx ? bin::kSetXx : 0) | (o.keep_ttl ? bin::kSetKeepTtl : 0);
  Result r = CallOrThrow(
      [=](Connection& c, Handler h) { c.AsyncSet(key, value, o.ttl_ms, flags, std::move(h)); });
  return r.status == Status::kOk;
}

int64_t SyncClient::Del(std::string_view key) {
  return BodyInt(CallOrThrow([key](Connection& c, Handler h) { c.AsyncDel(key, std::move(h)); }));
}

bool SyncClient::Exists(std::string_view key) {
  return BodyInt(CallOrThrow(
             [key](Connection& c, Handler h) { c.AsyncExists(key, std::move(h)); })) != 0;
}

int64_t SyncClient::Incr(std::string_view key, int64_t delta, uint64_t ttl_on_create_ms) {
  return BodyInt(CallOrThrow(
      [=](Connection& c, Handler h) { c.AsyncIncr(key, delta, ttl_on_create_ms, std::move(h)); }));
}

bool SyncClient::Expire(std::string_view key, uint64_t ttl_ms, uint8_t flags) {
  return BodyInt(CallOrThrow([=](Connection& c, Handler h) {
           c.AsyncExpire(key, ttl_ms, flags, std::move(h));
         })) != 0;
}

std::optional<int64_t> SyncClient::Lock(std::string_view key, std::string_view owner,
                                        uint64_t ttl_ms) {
  Result r =
      CallOrThrow([=](Connection& c, Handler h) { c.AsyncLock(key, owner, ttl_ms, std::move(h)); });
  if (r.status != Status::kOk) return std::nullopt;
  return BodyInt(r);
}

bool SyncClient::Unlock(std::string_view key, std::string_view owner) {
  return BodyInt(CallOrThrow(
             [=](Connection& c, Handler h) { c.AsyncUnlock(key, owner, std::move(h)); })) != 0;
}

bool SyncClient::Extend(std::string_view key, std::string_view owner, uint64_t ttl_ms) {
  return BodyInt(CallOrThrow([=](Connection& c, Handler h) {
           c.AsyncExtend(key, owner, ttl_ms, std::move(h));
         })) != 0;
}

ThrottleResult SyncClient::Throttle(std::string_view key, uint64_t max_burst, uint64_t count,
                                    uint64_t period_s, uint64_t quantity) {
  Result r = CallOrThrow([=](Connection& c, Handler h) {
    c.AsyncThrottle(key, max_burst, count, period_s, quantity, std::move(h));
  });
  bin::BodyReader reader(r.body);
  ThrottleResult t;
  t.limited = reader.I64() != 0;
  t.limit = reader.I64();
  t.remaining = reader.I64();
  t.retry_after_s = reader.I64();
  t.reset_after_s = reader.I64();
  if (!reader.ok()) throw Error(ErrorKind::kProtocol, Status::kError, "short THROTTLE reply");
  return t;
}

FixedWindowResult SyncClient::FixedWindow(std::string_view key, uint64_t limit, uint64_t window_ms,
                                          uint64_t cost) {
  Result r = CallOrThrow([=](Connection& c, Handler h) {
    c.AsyncFixedWindow(key, limit, window_ms, cost, std::move(h));
  });
  bin::BodyReader reader(r.body);
  FixedWindowResult w;
  w.allowed = reader.I64() != 0;
  w.remaining = reader.I64();
  w.reset_ms = reader.I64();
  if (!reader.ok()) throw Error(ErrorKind::kProtocol, Status::kError, "short FIXED_WINDOW reply");
  return w;
}

int64_t SyncClient::Publish(std::string_view channel, std::string_view message) {
  return BodyInt(CallOrThrow(
      [=](Connection& c, Handler h) { c.AsyncPublish(channel, message, std::move(h)); }));
}

uint32_t SyncClient::Subscribe(std::string_view channel, EventHandler on_event, bool pattern) {
  uint32_t sub_id = 0;
  CallOrThrow([&](Connection& c, Handler h) {
    sub_id = c.AsyncSubscribe(channel, pattern, std::move(on_event), std::move(h));
  });
  return sub_id;
}

void SyncClient::Unsubscribe(uint32_t subscription_id) {
  CallOrThrow([=](Connection& c, Handler h) { c.AsyncUnsubscribe(subscription_id, std::move(h)); });
}

std::string SyncClient::Command(const std::vector<std::string>& args) {
  return CallOrThrow([&](Connection& c, Handler h) { c.AsyncCommand(args, std::move(h)); }).body;
}

client::Topology SyncClient::Topology() {
  Result r = CallOrThrow([](Connection& c, Handler h) { c.AsyncTopology(std::move(h)); });
  client::Topology topology;
  if (!ParseTopologyBody(r.body, &topology)) {
    throw Error(ErrorKind::kProtocol, Status::kError, "malformed TOPOLOGY reply");
  }
  return topology;
}

bool ParseTopologyBody(std::string_view body, Topology* topology) {
  bin::Topology parsed;
  if (!bin::ParseTopology(body, &parsed)) return false;
  topology->view_epoch = parsed.view_epoch;
  topology->cluster = (parsed.flags & bin::kTopologyCluster) != 0;
  topology->fenced = (parsed.flags & bin::kTopologyFenced) != 0;
  topology->self = parsed.self;
  topology->endpoints.clear();
  for (const bin::Endpoint& e : parsed.endpoints) {
    topology->endpoints.push_back({std::string(e.host), e.port, e.slot_ranges});
  }
  topology->members.clear();
  for (const bin::TopologyMember& m : parsed.members) {
    topology->members.push_back({std::string(m.id), std::string(m.host), m.client_port, m.state,
                                 m.first_endpoint, m.endpoint_count});
  }
  return true;
}

std::optional<Endpoint> Topology::EndpointFor(uint16_t slot) const {
  for (const ShardEndpoint& e : endpoints) {
    for (auto [first, last] : e.slot_ranges) {
      if (first <= slot && slot <= last) return Endpoint{e.host, e.port};
    }
  }
  return std::nullopt;
}

}  // namespace keep::client
