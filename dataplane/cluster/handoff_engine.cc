#include "dataplane/cluster/handoff_engine.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <map>
#include <tuple>

#include "dataplane/cluster/handoff_codec.h"
#include "dataplane/cluster/handoff_connection.h"
#include "dataplane/core/slot_transfer.h"

namespace keep::cluster {

namespace asio = boost::asio;
using asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

namespace {

// Entries a drop task examines per turn.
constexpr size_t kDropVisit = 4096;
// Export at most this many batches ahead of the socket.
constexpr size_t kWriteAhead = 1;

int64_t MillisSince(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start).count();
}

std::string EndpointText(const tcp::endpoint& endpoint) {
  boost::system::error_code ignored;
  return endpoint.address().to_string(ignored) + ":" + std::to_string(endpoint.port());
}

class Session {
 public:
  virtual ~Session() = default;
  virtual void Abort(const std::string& reason) = 0;
};

}  // namespace

struct HandoffEngine::State {
  State(asio::io_context& io_context, shard::ShardGroup& shard_group, core::SlotFunction function,
        HandoffOptions handoff_options, HandoffHooks handoff_hooks)
      : io(io_context),
        group(shard_group),
        slot_of(function),
        options(std::move(handoff_options)),
        hooks(std::move(handoff_hooks)),
        hello_key(DeriveHelloKey(options.peer_secret)) {}

  asio::io_context& io;
  shard::ShardGroup& group;
  core::SlotFunction slot_of;
  HandoffOptions options;
  HandoffHooks hooks;
  HandoffKey hello_key;
  HandoffCounters counters;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::vector<std::weak_ptr<Session>> sessions;
  bool stopped = false;

  void Track(const std::shared_ptr<Session>& session) {
    std::erase_if(sessions, [](const std::weak_ptr<Session>& s) { return s.expired(); });
    sessions.push_back(session);
  }
  // Counts why a connection ended.
  void CountClose(const std::string& reason, bool violation) {
    if (violation) ++counters.rejected_messages;
    if (reason.find("deadline") != std::string::npos) ++counters.deadlines_expired;
  }
  void Call(const std::function<void(uint16_t)>& hook, uint16_t slot) {
    if (hook) hook(slot);
  }
};

namespace {

using State = HandoffEngine::State;

// Drops the keys of `slots` on `shard` in bounded tasks, then calls done(keys erased).
void DropOnShard(const std::shared_ptr<State>& st, int shard, core::SlotSet slots,
                 std::function<void(size_t)> done, core::ExportCursor cursor = {},
                 size_t erased = 0) {
  st->group.SubmitTo(
      shard,
      [slots, cursor, slot_of = st->slot_of](shard::ShardTaskContext& ctx) mutable {
        const int64_t start = core::MonotonicNanos();
        size_t n = core::DropSlots(ctx.store, slot_of, slots, &cursor, kDropVisit);
        return std::make_tuple(cursor, n, core::MonotonicNanos() - start);
      },
      [st, shard, slots, done = std::move(done),
       erased](std::tuple<core::ExportCursor, size_t, int64_t> result) mutable {
        auto& [next, n, ns] = result;
        st->counters.keys_dropped += n;
        st->counters.longest_drop_task_ns = std::max(st->counters.longest_drop_task_ns, ns);
        erased += n;
        if (!next.done) {
          DropOnShard(st, shard, slots, std::move(done), next, erased);
        } else {
          done(erased);
        }
      });
}

// Slots grouped by the local shard that owns them.
std::map<int, std::vector<uint16_t>> ByShard(const std::vector<uint16_t>& slots, int shards) {
  std::map<int, std::vector<uint16_t>> out;
  for (uint16_t slot : slots) out[slot % shards].push_back(slot);
  return out;
}

core::SlotSet SetOf(const std::vector<uint16_t>& slots) {
  core::SlotSet set;
  for (uint16_t slot : slots) set.Add(slot);
  return set;
}

// ---------------------------------------------------------------------------------------------
// The old owner's side of one pull.
class ExportSession final : public Session, public std::enable_shared_from_this<ExportSession> {
 public:
  ExportSession(std::shared_ptr<State> st, tcp::socket socket)
      : st_(std::move(st)), deadline_(st_->io), keepalive_(st_->io) {
    boost::system::error_code ignored;
    peer_ = EndpointText(socket.remote_endpoint(ignored));
    conn_ = std::make_shared<HandoffConnection>(std::move(socket), st_->options.max_message_bytes);
    conn_->set_write_timeout(st_->options.message_timeout);
  }

  void Start() {
    auto self = shared_from_this();
    start_ = SteadyClock::now();
    conn_->on_close = [self](const std::string& reason, bool violation) {
      self->st_->CountClose(reason, violation);
      if (violation)
        std::fprintf(stderr, "keep-handoff: export peer=%s rejected: %s\n", self->peer_.c_str(),
                     reason.c_str());
      self->Fail(reason);
    };
    deadline_.expires_after(st_->options.pull_timeout);
    deadline_.async_wait([self](const boost::system::error_code& error) {
      if (!error && !self->finished_) {
        ++self->st_->counters.deadlines_expired;
        self->conn_->Send(HandoffType::kError, EncodeError(kErrorDeadline, "pull deadline passed"));
        self->Fail("pull deadline passed");
      }
    });
    conn_->set_receive_key(st_->hello_key);
    conn_->Read(st_->options.message_timeout,
                [self](const OpenedMessage& message) { self->OnHello(message); });
  }

  void Abort(const std::string& reason) override {
    conn_->Send(HandoffType::kError, EncodeError(kErrorShutdown, reason));
    Fail(reason);
  }

 private:
  enum Phase : uint8_t { kExporting, kDoneSent, kAcked, kReleased };

  void OnHello(const OpenedMessage& message) {
    if (finished_) return;
    HelloBody hello;
    if (message.type != HandoffType::kHello || !ParseHello(message.body, &hello)) {
      conn_->Reject("expected HELLO");
      return;
    }
    if (hello.version != kHandoffVersion) {
      conn_->Send(HandoffType::kError, EncodeError(kErrorProtocol, "unsupported version"));
      conn_->CloseAfterWrites("unsupported version");
      return;
    }
    HelloBody ack;
    ack.nonce = RandomNonce();
    HandoffKeys keys;
    DeriveSessionKeys(st_->options.peer_secret, hello.nonce, ack.nonce, &keys);
    conn_->set_send_key(keys.server_to_client);
    conn_->set_receive_key(keys.client_to_server);
    conn_->Send(HandoffType::kHelloAck, EncodeHello(ack));
    auto self = shared_from_this();
    conn_->Read(st_->options.message_timeout,
                [self](const OpenedMessage& message) { self->OnPull(message); });
  }

  void OnPull(const OpenedMessage& message) {
    if (finished_) return;
    if (message.type != HandoffType::kPull || !ParseSlotList(message.body, &slots_)) {
      conn_->Reject("expected PULL");
      return;
    }
    if (st_->hooks.classify_export) {
      std::vector<uint16_t> exported, not_held, not_yet;
      for (uint16_t slot : slots_) {
        switch (st_->hooks.classify_export(slot)) {
          case ExportDecision::kExport:
            exported.push_back(slot);
            break;
          case ExportDecision::kNotHeld:
            not_held.push_back(slot);
            break;
          case ExportDecision::kNotYet:
            not_yet.push_back(slot);
            break;
        }
      }
      if (!not_held.empty()) {
        conn_->Send(HandoffType::kDeclined, EncodeDeclined(DeclineReason::kNotHeld, not_held));
      }
      if (!not_yet.empty()) {
        conn_->Send(HandoffType::kDeclined, EncodeDeclined(DeclineReason::kNotYet, not_yet));
      }
      if (exported.size() != slots_.size()) {
        std::fprintf(stderr,
                     "keep-handoff: export peer=%s slots=%zu declined not_held=%zu not_yet=%zu\n",
                     peer_.c_str(), slots_.size(), not_held.size(), not_yet.size());
      }
      slots_ = std::move(exported);
      if (slots_.empty()) {
        finished_ = true;
        deadline_.cancel();
        conn_->CloseAfterWrites("all declined");
        return;
      }
    } else if (st_->hooks.authorize_export && !st_->hooks.authorize_export(slots_)) {
      std::fprintf(stderr, "keep-handoff: export peer=%s slots=%zu refused\n", peer_.c_str(),
                   slots_.size());
      conn_->Send(HandoffType::kError, EncodeError(kErrorRefused, "slots not exported here"));
      conn_->CloseAfterWrites("refused");
      slots_.clear();
      return;
    }
    accepted_ = true;
    phase_.assign(core::kSlotCount, kExporting);
    ++st_->counters.exports_started;
    for (uint16_t slot : slots_) st_->Call(st_->hooks.on_slot_exporting, slot);
    std::fprintf(stderr, "keep-handoff: export start peer=%s slots=%zu\n", peer_.c_str(),
                 slots_.size());
    // One walk per local shard, all running at once; the socket paces them.
    for (auto& [shard, slots] : ByShard(slots_, st_->group.count())) {
      walkers_.push_back({shard, slots, SetOf(slots), {}});
    }
    ReadClient();
    KeepAlive(conn_->bytes_sent());
    for (size_t i = 0; i < walkers_.size(); ++i) ExportNext(i);
  }

  // A long walk past keys of other slots, or a long drop after SLOTS_ACK, sends nothing for a
  // while; an empty BATCH then tells the gainer, whose every read has a deadline, that we are
  // alive. A write that is queued or in flight already does, or fails by its own deadline.
  void KeepAlive(uint64_t sent_before) {
    auto self = shared_from_this();
    keepalive_.expires_after(st_->options.message_timeout / 4);
    keepalive_.async_wait([self, sent_before](const boost::system::error_code& error) {
      if (error || self->finished_) return;
      if (self->conn_->bytes_sent() == sent_before && self->conn_->queued() == 0) {
        self->conn_->Send(HandoffType::kBatch, {});
      }
      self->KeepAlive(self->conn_->bytes_sent());
    });
  }

  void ReadClient() {
    auto self = shared_from_this();
    // The gainer speaks only after SLOTS_DONE; the pull deadline bounds the wait.
    conn_->Read(st_->options.pull_timeout,
                [self](const OpenedMessage& message) { self->OnClientMessage(message); });
  }

  void OnClientMessage(const OpenedMessage& message) {
    if (finished_) return;
    if (message.type == HandoffType::kError) {
      ErrorBody error;
      std::string text = ParseError(message.body, &error) ? std::string(error.text) : "?";
      Fail("gainer error: " + text);
      return;
    }
    std::vector<uint16_t> acked;
    if (message.type != HandoffType::kSlotsAck || !ParseSlotList(message.body, &acked)) {
      conn_->Reject("expected SLOTS_ACK");
      return;
    }
    for (uint16_t slot : acked) {
      if (phase_[slot] != kDoneSent) {
        conn_->Reject("SLOTS_ACK of a slot not done");
        return;
      }
    }
    for (uint16_t slot : acked) phase_[slot] = kAcked;
    Drop(acked);
    ReadClient();
  }

  void ExportNext(size_t walker) {
    auto self = shared_from_this();
    conn_->OnWritable(kWriteAhead * walkers_.size(),
                      [self, walker] { self->SubmitExport(walker); });
  }

  struct Exported {
    core::ExportCursor cursor;
    core::TransferStats stats;
    std::string batch;
    int64_t ns = 0;
  };

  void SubmitExport(size_t walker) {
    if (finished_) return;
    auto self = shared_from_this();
    const Walker& w = walkers_[walker];
    core::ExportLimits limits;
    limits.budget_bytes = st_->options.batch_budget_bytes;
    st_->group.SubmitTo(
        w.shard,
        [set = w.set, cursor = w.cursor, limits,
         slot_of = st_->slot_of](shard::ShardTaskContext& ctx) mutable {
          Exported out;
          const int64_t start = core::MonotonicNanos();
          out.stats = core::ExportSlots(ctx.store, slot_of, set, &cursor, limits, &out.batch);
          out.ns = core::MonotonicNanos() - start;
          out.cursor = cursor;
          return out;
        },
        [self, walker](Exported exported) { self->OnExported(walker, std::move(exported)); });
  }

  void OnExported(size_t walker, Exported exported) {
    if (finished_) return;
    Walker& w = walkers_[walker];
    w.cursor = exported.cursor;
    st_->counters.longest_export_task_ns =
        std::max(st_->counters.longest_export_task_ns, exported.ns);
    st_->counters.export_task_ns += exported.ns;
    ++st_->counters.export_tasks;
    if (!exported.batch.empty()) {
      if (exported.batch.size() + kHandoffMinLength > st_->options.max_message_bytes) {
        conn_->Send(HandoffType::kError, EncodeError(kErrorProtocol, "record too large"));
        Fail("a record exceeds max_message_bytes");
        return;
      }
      keys_ += exported.stats.records;
      bytes_ += exported.batch.size();
      st_->counters.keys_exported += exported.stats.records;
      st_->counters.bytes_exported += exported.batch.size();
      conn_->Send(HandoffType::kBatch, exported.batch);
    }
    if (!w.cursor.done) {
      ExportNext(walker);
      return;
    }
    // This shard's walk is complete: its slots' state closes them.
    auto self = shared_from_this();
    st_->group.SubmitTo(
        w.shard,
        [slots = w.slots](shard::ShardTaskContext& ctx) {
          std::vector<SlotDone> done;
          for (uint16_t slot : slots) {
            core::SlotTransferState state = core::ExportSlotState(ctx.slots, slot, ctx.now_ms);
            done.push_back({slot, state.fencing_token, state.quarantine_remaining_ms});
          }
          return done;
        },
        [self](std::vector<SlotDone> done) {
          if (self->finished_) return;
          for (const SlotDone& d : done) self->phase_[d.slot] = kDoneSent;
          self->conn_->Send(HandoffType::kSlotsDone, EncodeSlotsDone(done));
        });
  }

  void Drop(const std::vector<uint16_t>& acked) {
    auto self = shared_from_this();
    for (auto& [shard, slots] : ByShard(acked, st_->group.count())) {
      DropOnShard(st_, shard, SetOf(slots), [self, slots = slots](size_t) {
        for (uint16_t slot : slots) {
          self->phase_[slot] = kReleased;
          ++self->st_->counters.slots_released;
          self->st_->Call(self->st_->hooks.on_slot_released, slot);
        }
        self->released_ += slots.size();
        self->conn_->Send(HandoffType::kReleased, EncodeSlotList(slots));
        if (self->released_ == self->slots_.size()) self->Succeed();
      });
    }
  }

  void Succeed() {
    if (finished_) return;
    finished_ = true;
    deadline_.cancel();
    keepalive_.cancel();
    ++st_->counters.exports_completed;
    std::fprintf(
        stderr, "keep-handoff: export done peer=%s slots=%zu keys=%llu bytes=%llu ms=%lld\n",
        peer_.c_str(), slots_.size(), static_cast<unsigned long long>(keys_),
        static_cast<unsigned long long>(bytes_), static_cast<long long>(MillisSince(start_)));
    conn_->CloseAfterWrites("export done");
  }

  void Fail(const std::string& reason) {
    if (finished_) return;
    finished_ = true;
    deadline_.cancel();
    keepalive_.cancel();
    conn_->on_close = nullptr;  // this is the one report of the failure
    if (!accepted_) {
      conn_->CloseAfterWrites(reason);  // an ERROR queued just before still goes out
      return;
    }
    ++st_->counters.exports_failed;
    size_t aborted = 0;
    for (uint16_t slot : slots_) {
      // Acknowledged slots belong to the gainer: their drop goes on regardless.
      if (phase_[slot] == kExporting || phase_[slot] == kDoneSent) {
        ++aborted;
        st_->Call(st_->hooks.on_export_aborted, slot);
      }
    }
    std::fprintf(stderr,
                 "keep-handoff: export failed peer=%s slots=%zu aborted=%zu keys=%llu ms=%lld "
                 "reason=%s\n",
                 peer_.c_str(), slots_.size(), aborted, static_cast<unsigned long long>(keys_),
                 static_cast<long long>(MillisSince(start_)), reason.c_str());
    conn_->CloseAfterWrites(reason);
  }

  std::shared_ptr<State> st_;
  std::shared_ptr<HandoffConnection> conn_;
  asio::steady_timer deadline_;
  asio::steady_timer keepalive_;
  std::string peer_;
  SteadyClock::time_point start_;
  std::vector<uint16_t> slots_;
  std::vector<uint8_t> phase_;
  struct Walker {
    int shard = 0;
    std::vector<uint16_t> slots;
    core::SlotSet set;
    core::ExportCursor cursor;
  };
  std::vector<Walker> walkers_;
  bool accepted_ = false;
  bool finished_ = false;
  size_t released_ = 0;
  uint64_t keys_ = 0;
  uint64_t bytes_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The gainer's side of one pull.
class ImportSession final : public Session, public std::enable_shared_from_this<ImportSession> {
 public:
  ImportSession(std::shared_ptr<State> st, tcp::endpoint source, std::vector<uint16_t> slots,
                std::function<void(uint16_t)> on_slot_done,
                std::function<void(const PullDeclined&)> on_complete,
                std::function<void(const PullFailure&)> on_error)
      : st_(std::move(st)),
        source_(std::move(source)),
        slots_(std::move(slots)),
        on_slot_done_(std::move(on_slot_done)),
        on_complete_(std::move(on_complete)),
        on_error_(std::move(on_error)),
        deadline_(st_->io),
        connect_timer_(st_->io) {}

  void Start() {
    auto self = shared_from_this();
    start_ = SteadyClock::now();
    peer_ = EndpointText(source_);
    ++st_->counters.pulls_started;
    std::fprintf(stderr, "keep-handoff: pull start source=%s slots=%zu\n", peer_.c_str(),
                 slots_.size());
    phase_.assign(core::kSlotCount, kNone);
    bool valid = !slots_.empty();
    for (uint16_t slot : slots_) {
      if (slot >= core::kSlotCount || phase_[slot] != kNone) valid = false;
      if (slot < core::kSlotCount) phase_[slot] = kImporting;
    }
    if (!valid) {
      for (uint16_t slot : slots_) {
        if (slot < core::kSlotCount) phase_[slot] = kNone;
      }
      Fail("invalid slot list (empty, out of range or repeated)");
      return;
    }
    for (uint16_t slot : slots_) {
      open_.Add(slot);
      st_->Call(st_->hooks.on_slot_importing, slot);
    }
    deadline_.expires_after(st_->options.pull_timeout);
    deadline_.async_wait([self](const boost::system::error_code& error) {
      if (!error && !self->finished_) {
        ++self->st_->counters.deadlines_expired;
        self->Fail("pull deadline passed");
      }
    });
    socket_ = std::make_unique<tcp::socket>(st_->io);
    connect_timer_.expires_after(st_->options.connect_timeout);
    connect_timer_.async_wait([self](const boost::system::error_code& error) {
      if (!error && !self->conn_) {
        ++self->st_->counters.deadlines_expired;
        self->Fail("connect deadline passed");
      }
    });
    socket_->async_connect(source_, [self](const boost::system::error_code& error) {
      self->connect_timer_.cancel();
      if (self->finished_) return;
      if (error) {
        self->Fail("connect failed: " + error.message());
        return;
      }
      self->OnConnected();
    });
  }

  void Abort(const std::string& reason) override {
    if (conn_) conn_->Send(HandoffType::kError, EncodeError(kErrorShutdown, reason));
    Fail(reason);
  }

 private:
  enum Phase : uint8_t { kNone, kImporting, kAcked, kOwned, kDeclined };

  void OnConnected() {
    auto self = shared_from_this();
    conn_ =
        std::make_shared<HandoffConnection>(std::move(*socket_), st_->options.max_message_bytes);
    socket_.reset();
    conn_->set_write_timeout(st_->options.message_timeout);
    conn_->on_close = [self](const std::string& reason, bool violation) {
      self->st_->CountClose(reason, violation);
      self->Fail(reason);
    };
    nonce_ = RandomNonce();
    conn_->set_send_key(st_->hello_key);
    HelloBody hello;
    hello.nonce = nonce_;
    conn_->Send(HandoffType::kHello, EncodeHello(hello));
    conn_->ReadFrame(st_->options.message_timeout,
                     [self](std::string_view frame) { self->OnHelloAck(frame); });
  }

  void OnHelloAck(std::string_view frame) {
    if (finished_) return;
    HelloBody ack;
    if (!ParseHello(UnverifiedBody(frame), &ack)) {
      // Possibly an ERROR from an owner that refuses us before any key exists: still not
      // something we can authenticate, so it is a violation.
      conn_->Reject("expected HELLO_ACK");
      return;
    }
    HandoffKeys keys;
    DeriveSessionKeys(st_->options.peer_secret, nonce_, ack.nonce, &keys);
    OpenedMessage message;
    OpenStatus status = conn_->Open(keys.server_to_client, frame, &message);
    if (status != OpenStatus::kOk || message.type != HandoffType::kHelloAck ||
        ack.version != kHandoffVersion) {
      conn_->Reject(std::string("HELLO_ACK rejected: ") + OpenStatusName(status));
      return;
    }
    conn_->set_send_key(keys.client_to_server);
    conn_->set_receive_key(keys.server_to_client);
    conn_->Send(HandoffType::kPull, EncodeSlotList(slots_));
    ReadNext();
  }

  void ReadNext() {
    if (finished_) return;
    auto self = shared_from_this();
    conn_->Read(st_->options.message_timeout,
                [self](const OpenedMessage& message) { self->OnMessage(message); });
  }

  void OnMessage(const OpenedMessage& message) {
    if (finished_) return;
    switch (message.type) {
      case HandoffType::kBatch:
        OnBatch(message.body);
        return;
      case HandoffType::kSlotsDone:
        OnSlotsDone(message.body);
        return;
      case HandoffType::kReleased:
        OnReleased(message.body);
        return;
      case HandoffType::kDeclined:
        OnDeclined(message.body);
        return;
      case HandoffType::kError: {
        ErrorBody error;
        std::string text = ParseError(message.body, &error) ? std::string(error.text) : "?";
        Fail("owner error: " + text);
        return;
      }
      default:
        conn_->Reject(std::string("unexpected ") + HandoffTypeName(message.type));
    }
  }

  void OnBatch(std::string_view body) {
    received_batch_ = true;
    if (body.empty()) {  // keepalive during a long walk
      ReadNext();
      return;
    }
    std::vector<std::string> parts;
    if (!core::SplitTransferRecords(body, st_->group.count(), &parts)) {
      conn_->Reject("malformed BATCH");
      return;
    }
    auto self = shared_from_this();
    for (int shard = 0; shard < st_->group.count(); ++shard) {
      if (parts[shard].empty()) continue;
      ++pending_;
      st_->group.SubmitTo(
          shard,
          [part = std::move(parts[shard]), set = open_,
           slot_of = st_->slot_of](shard::ShardTaskContext& ctx) {
            core::TransferStats stats;
            const int64_t start = core::MonotonicNanos();
            core::ImportError error =
                core::ImportRecords(ctx.store, slot_of, set, part, ctx.now_ms, &stats);
            return std::make_tuple(error, stats, core::MonotonicNanos() - start);
          },
          [self](std::tuple<core::ImportError, core::TransferStats, int64_t> result) {
            auto& counters = self->st_->counters;
            counters.longest_import_task_ns =
                std::max(counters.longest_import_task_ns, std::get<2>(result));
            counters.import_task_ns += std::get<2>(result);
            ++counters.import_tasks;
            self->OnImported(std::get<0>(result), std::get<1>(result));
          });
    }
  }

  void OnImported(core::ImportError error, const core::TransferStats& stats) {
    --pending_;
    if (finished_) return;
    if (error != core::ImportError::kNone) {
      ++st_->counters.rejected_messages;
      conn_->Send(HandoffType::kError, EncodeError(kErrorImport, core::ImportErrorName(error)));
      Fail(std::string("batch refused: ") + core::ImportErrorName(error));
      return;
    }
    keys_ += stats.records;
    bytes_ += stats.bytes;
    st_->counters.keys_imported += stats.records;
    st_->counters.bytes_imported += stats.bytes;
    if (pending_ == 0) ReadNext();
  }

  void OnSlotsDone(std::string_view body) {
    std::vector<SlotDone> done;
    if (!ParseSlotsDone(body, &done)) {
      conn_->Reject("malformed SLOTS_DONE");
      return;
    }
    for (const SlotDone& d : done) {
      if (phase_[d.slot] != kImporting) {
        conn_->Reject("SLOTS_DONE of a slot not being imported");
        return;
      }
    }
    std::map<int, std::vector<SlotDone>> by_shard;
    for (const SlotDone& d : done) {
      by_shard[d.slot % st_->group.count()].push_back(d);
      open_.Remove(d.slot);  // a record of it from now on is refused
    }
    auto self = shared_from_this();
    auto remaining = std::make_shared<size_t>(by_shard.size());
    std::vector<uint16_t> slots;
    for (const SlotDone& d : done) slots.push_back(d.slot);
    for (auto& [shard, states] : by_shard) {
      st_->group.SubmitTo(
          shard,
          [states = states](shard::ShardTaskContext& ctx) {
            for (const SlotDone& d : states) {
              core::ImportSlotState(&ctx.slots, d.slot,
                                    {d.fencing_token, d.quarantine_remaining_ms}, ctx.now_ms);
            }
          },
          [self, remaining, slots] {
            if (--*remaining > 0 || self->finished_) return;
            for (uint16_t slot : slots) self->phase_[slot] = kAcked;
            self->conn_->Send(HandoffType::kSlotsAck, EncodeSlotList(slots));
            self->ReadNext();
          });
    }
  }

  void OnDeclined(std::string_view body) {
    DeclineReason reason{};
    std::vector<uint16_t> slots;
    if (!ParseDeclined(body, &reason, &slots)) {
      conn_->Reject("malformed DECLINED");
      return;
    }
    for (uint16_t slot : slots) {
      if (phase_[slot] != kImporting || received_batch_) {
        conn_->Reject("DECLINED of a slot not being imported, or after a batch");
        return;
      }
    }
    auto& list = reason == DeclineReason::kNotHeld ? declined_.not_held : declined_.not_yet;
    for (uint16_t slot : slots) {
      phase_[slot] = kDeclined;
      open_.Remove(slot);
      list.push_back(slot);
    }
    if (owned_ + declined_.not_held.size() + declined_.not_yet.size() == slots_.size()) {
      Succeed();
    } else {
      ReadNext();
    }
  }

  void OnReleased(std::string_view body) {
    std::vector<uint16_t> released;
    if (!ParseSlotList(body, &released)) {
      conn_->Reject("malformed RELEASED");
      return;
    }
    for (uint16_t slot : released) {
      if (phase_[slot] != kAcked) {
        conn_->Reject("RELEASED of a slot not acknowledged");
        return;
      }
    }
    for (uint16_t slot : released) {
      phase_[slot] = kOwned;
      ++owned_;
      ++st_->counters.slots_imported;
      st_->Call(st_->hooks.on_slot_owned, slot);
      if (on_slot_done_) on_slot_done_(slot);
    }
    if (owned_ + declined_.not_held.size() + declined_.not_yet.size() == slots_.size()) {
      Succeed();
    } else {
      ReadNext();
    }
  }

  void Succeed() {
    finished_ = true;
    deadline_.cancel();
    ++st_->counters.pulls_completed;
    st_->counters.last_pull_ms = MillisSince(start_);
    std::fprintf(stderr,
                 "keep-handoff: pull done source=%s slots=%zu owned=%zu declined_not_held=%zu "
                 "declined_not_yet=%zu keys=%llu bytes=%llu ms=%lld\n",
                 peer_.c_str(), slots_.size(), owned_, declined_.not_held.size(),
                 declined_.not_yet.size(), static_cast<unsigned long long>(keys_),
                 static_cast<unsigned long long>(bytes_),
                 static_cast<long long>(st_->counters.last_pull_ms));
    conn_->Close("pull done");
    if (on_complete_) on_complete_(declined_);
  }

  void Fail(const std::string& reason) {
    if (finished_) return;
    finished_ = true;
    deadline_.cancel();
    connect_timer_.cancel();
    if (socket_) {
      boost::system::error_code ignored;
      socket_->close(ignored);
    }
    if (conn_) {
      conn_->on_close = nullptr;  // this is the one report of the failure
      conn_->CloseAfterWrites(reason);
    }
    ++st_->counters.pulls_failed;
    PullFailure failure;
    failure.reason = reason;
    failure.declined = declined_;
    for (uint16_t slot : slots_) {
      if (slot >= core::kSlotCount) continue;
      if (phase_[slot] == kImporting) failure.failed.push_back(slot);
      if (phase_[slot] == kAcked) failure.unconfirmed.push_back(slot);
    }
    std::fprintf(stderr,
                 "keep-handoff: pull failed source=%s slots=%zu failed=%zu unconfirmed=%zu "
                 "keys=%llu ms=%lld reason=%s\n",
                 peer_.c_str(), slots_.size(), failure.failed.size(), failure.unconfirmed.size(),
                 static_cast<unsigned long long>(keys_),
                 static_cast<long long>(MillisSince(start_)), reason.c_str());
    // The keys of slots never acknowledged are the old owner's: drop what arrived of them (the
    // drop runs after any import still queued on the shard, as tasks run in order).
    auto by_shard = ByShard(failure.failed, st_->group.count());
    if (by_shard.empty()) {
      if (on_error_) on_error_(failure);
      return;
    }
    auto self = shared_from_this();
    auto remaining = std::make_shared<size_t>(by_shard.size());
    auto shared_failure = std::make_shared<PullFailure>(std::move(failure));
    for (auto& [shard, slots] : by_shard) {
      DropOnShard(st_, shard, SetOf(slots), [self, remaining, shared_failure](size_t) {
        if (--*remaining == 0 && self->on_error_) self->on_error_(*shared_failure);
      });
    }
  }

  std::shared_ptr<State> st_;
  tcp::endpoint source_;
  std::vector<uint16_t> slots_;
  std::function<void(uint16_t)> on_slot_done_;
  std::function<void(const PullDeclined&)> on_complete_;
  std::function<void(const PullFailure&)> on_error_;
  asio::steady_timer deadline_;
  asio::steady_timer connect_timer_;
  PullDeclined declined_;
  bool received_batch_ = false;
  std::unique_ptr<tcp::socket> socket_;
  std::shared_ptr<HandoffConnection> conn_;
  std::string peer_;
  SteadyClock::time_point start_;
  HandoffNonce nonce_{};
  std::vector<uint8_t> phase_;
  core::SlotSet open_;  // slots whose records may still arrive
  size_t pending_ = 0;
  size_t owned_ = 0;
  bool finished_ = false;
  uint64_t keys_ = 0;
  uint64_t bytes_ = 0;
};

void AcceptLoop(const std::shared_ptr<State>& st) {
  if (!st->acceptor) return;
  st->acceptor->async_accept([st](const boost::system::error_code& error, tcp::socket socket) {
    if (error || st->stopped) return;
    auto session = std::make_shared<ExportSession>(st, std::move(socket));
    st->Track(session);
    session->Start();
    AcceptLoop(st);
  });
}

}  // namespace

HandoffEngine::HandoffEngine(asio::io_context& io, shard::ShardGroup& group,
                             core::SlotFunction slot_function, HandoffOptions options,
                             HandoffHooks hooks)
    : state_(std::make_shared<State>(io, group, slot_function, std::move(options),
                                     std::move(hooks))) {}

HandoffEngine::~HandoffEngine() { Stop(); }

void HandoffEngine::Serve(tcp::socket socket) {
  if (state_->stopped) return;
  auto session = std::make_shared<ExportSession>(state_, std::move(socket));
  state_->Track(session);
  session->Start();
}

tcp::endpoint HandoffEngine::Listen(const tcp::endpoint& endpoint) {
  state_->acceptor = std::make_unique<tcp::acceptor>(state_->io, endpoint, true);
  AcceptLoop(state_);
  return state_->acceptor->local_endpoint();
}

void HandoffEngine::Pull(const tcp::endpoint& source, std::vector<uint16_t> slots,
                         std::function<void(uint16_t)> on_slot_done,
                         std::function<void(const PullDeclined&)> on_complete,
                         std::function<void(const PullFailure&)> on_error) {
  auto session =
      std::make_shared<ImportSession>(state_, source, std::move(slots), std::move(on_slot_done),
                                      std::move(on_complete), std::move(on_error));
  state_->Track(session);
  if (state_->stopped) {
    session->Abort("handoff engine stopped");
    return;
  }
  session->Start();
}

void HandoffEngine::Stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  if (state_->acceptor) {
    boost::system::error_code ignored;
    state_->acceptor->close(ignored);
  }
  auto sessions = state_->sessions;
  for (auto& weak : sessions) {
    if (auto session = weak.lock()) session->Abort("handoff engine stopping");
  }
}

const HandoffCounters& HandoffEngine::counters() const { return state_->counters; }

}  // namespace keep::cluster
