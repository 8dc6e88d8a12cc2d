#include "bench/keep_bench/binary_driver.h"

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/keep_bench/driver.h"
#include "bench/keep_bench/histogram.h"
#include "bench/keep_bench/report.h"
#include "bench/keep_bench/schedule.h"
#include "bench/keep_bench/workload.h"
#include "dataplane/client/cluster_client.h"
#include "dataplane/client/keep_client.h"

namespace keep::bench {
namespace {

namespace kc = keep::client;
using kc::Result;
using kc::Status;

constexpr int kExitServer = 2;
// Replies still owed this long after the end of the run are counted as unfinished.
constexpr int64_t kDrainNs = 5'000'000'000;

// Which op a scheduled request is (coord draws among several).
enum class BinaryOp { kPing, kGet, kSet, kSetPx, kIncr, kIncrExpire, kFixedWindow, kLock };

struct Pick {
  BinaryOp op;
  uint32_t weight;
};

std::vector<Pick> Mix(const Options& o) {
  switch (o.workload) {
    case WorkloadKind::kPing:
      return {{BinaryOp::kPing, 1}};
    case WorkloadKind::kGet:
      return {{BinaryOp::kGet, 1}};
    case WorkloadKind::kSet:
      return {{BinaryOp::kSet, 1}};
    case WorkloadKind::kMixed:
      return {{BinaryOp::kGet, o.ratio_reads}, {BinaryOp::kSet, o.ratio_writes}};
    case WorkloadKind::kIncr:
      return {{BinaryOp::kIncr, 1}};
    case WorkloadKind::kRateLimit:
      return {{BinaryOp::kFixedWindow, 1}};
    case WorkloadKind::kLock:
      return {{BinaryOp::kLock, 1}};
    case WorkloadKind::kCoord:
      // The RESP coord mix (workload.cc): 40% lookups, 25% counters given a window when created,
      // 15% locks released at once, 20% short-lived values.
      return {{BinaryOp::kGet, 40},
              {BinaryOp::kIncrExpire, 25},
              {BinaryOp::kLock, 15},
              {BinaryOp::kSetPx, 20}};
  }
  return {};
}

std::string KeyName(std::string_view prefix, uint64_t index, int width) {
  std::string digits = std::to_string(index);
  std::string key(prefix);
  key.append(static_cast<size_t>(std::max(0, width - static_cast<int>(digits.size()))), '0');
  key.append(digits);
  return key;
}

struct Caller {
  int index = 0;
  int socket = 0;
  Rng rng{0};
  std::string token;  // lock owner
  int inflight = 0;   // -1 once the caller has finished
  bool done = false;
  // Open loop: this caller's share of the --rate stream and the next request of it to send.
  OpenLoopSchedule schedule;
  uint64_t next_k = 0;
  bool schedule_done = false;
};

// How the run reaches the server: one endpoint, or a cluster routed by slot.
struct Target {
  bool cluster = false;
  kc::ClusterOptions cluster_options;  // seeds, secret and the slot function the probe found
};

kc::Options ConnectionOptions(const Options& o, const char* name) {
  kc::Options options;
  options.host = o.host;
  options.port = static_cast<uint16_t>(o.port);
  options.client_name = name;
  options.batching = o.batching;
  options.timeout = std::chrono::milliseconds(10000);
  options.connect_timeout = std::chrono::milliseconds(5000);
  return options;
}

class LoadThread {
 public:
  LoadThread(const Options& o, const Target& target, const RunClock& clock, uint64_t quota,
             ThreadProgress* progress)
      : o_(o),
        target_(target),
        clock_(clock),
        quota_(quota),
        progress_(progress),
        picker_(o),
        mix_(Mix(o)),
        width_(KeyWidth(o.keys)),
        value_(o.value_size, 'v'),
        open_loop_(o.rate > 0),
        pipeline_(std::max(1, o.pipeline)),
        drain_timer_(io_),
        tick_(io_) {
    for (const Pick& p : mix_) total_weight_ += p.weight;
  }

  void AddSocket() {
    if (target_.cluster) {
      kc::ClusterOptions options = target_.cluster_options;
      options.connection = ConnectionOptions(o_, "keep-bench");
      clusters_.push_back(kc::ClusterClient::Create(io_, std::move(options)));
      return;
    }
    sockets_.push_back(kc::Connection::Create(io_, ConnectionOptions(o_, "keep-bench")));
  }

  // The cluster clients' counters, summed (after Run).
  kc::ClusterStats ClusterTotals() const {
    kc::ClusterStats total;
    for (const auto& c : clusters_) {
      const kc::ClusterStats& s = c->stats();
      total.moved += s.moved;
      total.busy_retries += s.busy_retries;
      total.fenced_retries += s.fenced_retries;
      total.connection_retries += s.connection_retries;
      total.refreshes += s.refreshes;
    }
    return total;
  }
  void AddCaller(int index, int socket) {
    Caller c;
    c.index = index;
    c.socket = socket;
    c.rng = Rng(o_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(index) + 1);
    c.token = "bench-" + std::to_string(index);
    if (open_loop_) c.schedule = OpenLoopSchedule(clock_.start_ns, o_.rate, o_.connections, index);
    callers_.push_back(std::move(c));
  }

  void Run(ThreadStats* stats) {
    stats_ = stats;
    for (auto& cluster : clusters_) {
      cluster->AsyncStart([this](std::optional<kc::Error> error) {
        if (error && stats_->fatal.empty()) {
          stats_->fatal = "cannot reach the cluster at " + o_.host + ":" + std::to_string(o_.port) +
                          ": " + error->message();
          Stop();
        }
      });
    }
    for (auto& socket : sockets_) {
      socket->AsyncConnect([this](std::optional<kc::Error> error) {
        if (error && stats_->fatal.empty()) {
          stats_->fatal = "cannot connect to " + o_.host + ":" + std::to_string(o_.port) + ": " +
                          error->message();
          Stop();
        }
      });
    }
    remaining_ = static_cast<int>(callers_.size());
    if (open_loop_) {
      // The default 50 us timer slack would delay every scheduled send by up to that much.
      prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
      int64_t now = NowNs();
      for (Caller& c : callers_) Fill(c, now);
      ArmTick();
    } else {
      for (Caller& c : callers_) {
        for (int i = 0; i < pipeline_; ++i) Issue(c);
      }
    }
    if (o_.requests == 0) {
      auto end = std::chrono::nanoseconds(clock_.measure_end_ns - NowNs() + kDrainNs);
      drain_timer_.expires_after(end);
      drain_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) Stop();
      });
    }
    if (remaining_ == 0) Stop();
    io_.run();
  }

 private:
  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    int64_t now = NowNs();
    for (Caller& c : callers_) {
      stats_->unfinished += static_cast<uint64_t>(std::max(0, c.inflight));
      // Open loop: requests that were due inside the window but never left are queueing too.
      if (open_loop_ && !c.schedule_done && stats_->fatal.empty()) {
        uint64_t due = c.schedule.DueBy(std::min(now, clock_.measure_end_ns - 1));
        if (due > c.next_k) stats_->unfinished += due - c.next_k;
      }
    }
    drain_timer_.cancel();
    tick_.cancel();
    for (auto& socket : sockets_) socket->Close();
    for (auto& cluster : clusters_) cluster->Close();
  }

  void CallerIdle(Caller& c) {
    if (c.inflight == 0 && c.done) {
      c.done = false;  // count once
      c.inflight = -1;
      if (--remaining_ == 0) Stop();
    }
  }

  BinaryOp Draw(Caller& c) {
    if (mix_.size() == 1) return mix_[0].op;
    uint64_t r = c.rng.Below(total_weight_);
    for (const Pick& p : mix_) {
      if (r < p.weight) return p.op;
      r -= p.weight;
    }
    return mix_.back().op;
  }

  // Closed loop: the caller's next request, now, unless the run is over for it.
  void Issue(Caller& c) {
    if (stopped_ || c.inflight < 0) return;
    int64_t now = NowNs();
    bool measured = now >= clock_.measure_start_ns;
    if (now >= clock_.measure_end_ns || (o_.requests > 0 && measured && issued_ >= quota_)) {
      c.done = true;
      CallerIdle(c);
      return;
    }
    Send(c, now, measured);
  }

  // Open loop (as the RESP driver, schedule.h): sends every request of the caller's schedule
  // that is due at `now`, at most --pipeline in flight; one that is due while the caller is full
  // waits, and its latency still counts from its intended time.
  void Fill(Caller& c, int64_t now) {
    if (stopped_ || c.inflight < 0) return;
    while (!c.schedule_done && c.inflight < pipeline_) {
      int64_t intended = c.schedule.Intended(c.next_k);
      bool measured = intended >= clock_.measure_start_ns;
      if (intended >= clock_.measure_end_ns || (o_.requests > 0 && measured && issued_ >= quota_)) {
        c.schedule_done = true;
        break;
      }
      if (intended > now) break;
      ++c.next_k;
      Send(c, intended, measured);
      if (stopped_) return;
    }
    if (c.schedule_done) {
      // Finishes the caller once its last reply is in (CallerIdle waits for inflight == 0).
      c.done = true;
      CallerIdle(c);
    }
  }

  // When `c` next has a request to send, or INT64_MAX.
  int64_t NextDue(const Caller& c) const {
    if (c.schedule_done || c.inflight < 0 || c.inflight >= pipeline_) return INT64_MAX;
    return c.schedule.Intended(c.next_k);
  }

  // Arms the tick for the earliest due request of any caller.
  void ArmTick() {
    int64_t wake = INT64_MAX;
    for (const Caller& c : callers_) wake = std::min(wake, NextDue(c));
    ArmTickAt(wake);
  }

  void ArmTickAt(int64_t wake) {
    if (stopped_ || wake == INT64_MAX || wake >= tick_at_) return;
    tick_at_ = wake;
    tick_.expires_after(std::chrono::nanoseconds(std::max<int64_t>(0, wake - NowNs())));
    tick_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      tick_at_ = INT64_MAX;
      int64_t now = NowNs();
      for (Caller& c : callers_) Fill(c, now);
      ArmTick();
    });
  }

  void Send(Caller& c, int64_t now, bool measured) {
    if (measured) ++issued_;
    ++c.inflight;
    if (target_.cluster) {
      SendTo(*clusters_[static_cast<size_t>(c.socket)], c, now, measured);
    } else {
      SendTo(*sockets_[static_cast<size_t>(c.socket)], c, now, measured);
    }
  }

  // `Socket`: a kc::Connection, or a kc::ClusterClient routing each key to its slot's shard.
  template <typename Socket>
  void SendTo(Socket& socket, Caller& c, int64_t now, bool measured) {
    uint64_t index = picker_.Pick(c.rng);
    auto done = [this, &c, now, measured](bool follow_up) {
      return [this, &c, now, measured, follow_up](Result r) {
        OnReply(c, now, measured, follow_up, r);
      };
    };
    switch (Draw(c)) {
      case BinaryOp::kPing:
        socket.AsyncPing(done(false));
        break;
      case BinaryOp::kGet:
        socket.AsyncGet(KeyName("key:", index, width_), done(false));
        break;
      case BinaryOp::kSet:
        socket.AsyncSet(KeyName("key:", index, width_), value_, 0, 0, done(false));
        break;
      case BinaryOp::kSetPx:
        socket.AsyncSet(KeyName("key:", index, width_), value_, Workload::kShortLivedMs, 0,
                        done(false));
        break;
      case BinaryOp::kIncr:
        socket.AsyncIncr(KeyName("ctr:", index, width_), 1, 0, done(false));
        break;
      case BinaryOp::kIncrExpire: {
        std::string key = KeyName("ctr:", index, width_);
        socket.AsyncIncr(key, 1, 0, [this, &c, now, measured, key, &socket](Result r) {
          // Created by this INCR: give it its window (the RESP coord's INCR + PEXPIRE).
          bool created = r.ok() && r.status == Status::kOk && kc::BodyInt(r) == 1;
          if (created && !stopped_) {
            Count(c, now, measured, r);
            int64_t sent = NowNs();
            socket.AsyncExpire(
                key, Workload::kCounterWindowMs, 0,
                [this, &c, sent, measured](Result e) { OnReply(c, sent, measured, true, e); });
            return;
          }
          OnReply(c, now, measured, false, r);
        });
        break;
      }
      case BinaryOp::kFixedWindow:
        socket.AsyncFixedWindow(KeyName("rl:", index, width_), o_.ratelimit_limit,
                                o_.ratelimit_window_ms, 1, done(false));
        break;
      case BinaryOp::kLock: {
        std::string key = KeyName("lock:", index, width_);
        socket.AsyncLock(key, c.token, o_.lock_ttl_ms,
                         [this, &c, now, measured, key, &socket](Result r) {
                           if (r.ok() && r.status == Status::kOk && !stopped_) {
                             Count(c, now, measured, r);
                             int64_t sent = NowNs();
                             socket.AsyncUnlock(key, c.token, [this, &c, sent, measured](Result u) {
                               OnReply(c, sent, measured, true, u);
                             });
                             return;
                           }
                           OnReply(c, now, measured, false, r);
                         });
        break;
      }
    }
  }

  // Accounts one reply; false when the run cannot go on.
  bool Count(Caller&, int64_t start_ns, bool measured, const Result& r) {
    int64_t now = NowNs();
    ++stats_->total;
    progress_->replies.fetch_add(1, std::memory_order_relaxed);
    // A cluster request given up (kUnavailable) is an error reply: the others go on.
    if (!r.ok() && r.error->kind() != kc::ErrorKind::kServer &&
        r.error->kind() != kc::ErrorKind::kUnavailable) {
      if (!stopped_ && stats_->fatal.empty()) stats_->fatal = r.error->message();
      Stop();
      return false;
    }
    if (!measured) return true;
    ++stats_->measured;
    stats_->last_reply_ns = std::max(stats_->last_reply_ns, now);
    stats_->histogram.Record(static_cast<uint64_t>(std::max<int64_t>(0, now - start_ns)));
    if (!r.ok()) {
      ++stats_->errors;
      progress_->errors.fetch_add(1, std::memory_order_relaxed);
      if (stats_->first_error.empty()) stats_->first_error = r.error->message();
    } else if (r.status == Status::kNil || r.status == Status::kLocked) {
      ++stats_->nils;
    }
    return true;
  }

  // `start_ns`: when the request was sent (closed loop, follow-ups) or intended (open loop).
  void OnReply(Caller& c, int64_t start_ns, bool measured, bool follow_up, const Result& r) {
    if (stopped_) return;
    if (follow_up && measured) ++stats_->follow_ups;
    if (!Count(c, start_ns, measured, r)) return;
    --c.inflight;
    if (!open_loop_) return Issue(c);
    Fill(c, NowNs());
    ArmTickAt(NextDue(c));
  }

  const Options& o_;
  const Target& target_;
  RunClock clock_;
  uint64_t quota_;
  ThreadProgress* progress_;
  KeyPicker picker_;
  std::vector<Pick> mix_;
  uint32_t total_weight_ = 0;
  int width_;
  std::string value_;
  const bool open_loop_;
  const int pipeline_;
  boost::asio::io_context io_;
  boost::asio::steady_timer drain_timer_;
  // Open loop: fires when the earliest scheduled request is due (tick_at_, INT64_MAX: unarmed).
  boost::asio::steady_timer tick_;
  int64_t tick_at_ = INT64_MAX;
  std::vector<std::shared_ptr<kc::Connection>> sockets_;
  std::vector<std::shared_ptr<kc::ClusterClient>> clusters_;
  std::vector<Caller> callers_;
  ThreadStats* stats_ = nullptr;
  uint64_t issued_ = 0;
  int remaining_ = 0;
  bool stopped_ = false;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "keep-bench: %s\n", message.c_str());
  return kExitServer;
}

// SETs every key through one libkeep connection (or cluster client), 1000 in flight at a time.
int Populate(const Options& o, const Target& target, uint64_t* populated,
             kc::ClusterStats* cluster_stats) {
  kc::Options options = ConnectionOptions(o, "keep-bench-populate");
  options.batching = true;
  boost::asio::io_context io;
  std::shared_ptr<kc::Connection> conn;
  std::shared_ptr<kc::ClusterClient> cluster;
  std::string failure;
  if (target.cluster) {
    kc::ClusterOptions cluster_options = target.cluster_options;
    cluster_options.connection = options;
    cluster = kc::ClusterClient::Create(io, std::move(cluster_options));
  } else {
    conn = kc::Connection::Create(io, options);
    conn->AsyncConnect([&](std::optional<kc::Error> error) {
      if (error && failure.empty()) failure = error->message();
    });
  }
  auto close = [&] {
    if (cluster) cluster->Close();
    if (conn) conn->Close();
  };
  auto set = [&](const std::string& key, const std::string& value, kc::Handler h) {
    if (cluster) {
      cluster->AsyncSet(key, value, 0, 0, std::move(h));
    } else {
      conn->AsyncSet(key, value, 0, 0, std::move(h));
    }
  };
  const int width = KeyWidth(o.keys);
  const std::string value(o.value_size, 'v');
  uint64_t next = 0;
  uint64_t done = 0;
  std::function<void()> issue = [&] {
    if (next >= o.keys || !failure.empty()) return;
    uint64_t index = next++;
    set(KeyName("key:", index, width), value, [&](Result r) {
      if (!r.ok() && failure.empty()) failure = r.error->message();
      ++done;
      if (done == o.keys || !failure.empty()) {
        if (cluster && cluster_stats != nullptr) *cluster_stats = cluster->stats();
        close();
        return;
      }
      issue();
    });
  };
  for (int i = 0; i < 1000; ++i) issue();
  if (o.keys == 0) close();
  io.run();
  if (!failure.empty() && done < o.keys) return Fail("populating the keys failed: " + failure);
  *populated = o.keys;
  return 0;
}

// The cluster secret: --secret-file's first line, else KEEP_SECRET, else none. False when the
// file cannot be read.
bool ReadSecret(const Options& o, std::string* secret, std::string* error) {
  if (!o.secret_file.empty()) {
    std::ifstream in(o.secret_file);
    if (!in || !std::getline(in, *secret) || secret->empty()) {
      *error = "cannot read a secret from '" + o.secret_file + "'";
      return false;
    }
    return true;
  }
  if (const char* env = std::getenv("KEEP_SECRET"); env != nullptr) *secret = env;
  return true;
}

// Asks the server's TOPOLOGY whether it is a cluster member (and, when it is, how keys map to
// slots) unless --cluster off. 0, or an exit status.
int ChooseTarget(const Options& o, Target* target, std::string* slot_mode) {
  if (o.cluster == ClusterMode::kOff) return 0;
  std::string secret;
  std::string error;
  if (!ReadSecret(o, &secret, &error)) {
    std::fprintf(stderr, "keep-bench: %s\n", error.c_str());
    return 1;
  }
  kc::ClusterOptions options;
  options.seeds = {{o.host, static_cast<uint16_t>(o.port)}};
  options.connection = ConnectionOptions(o, "keep-bench-topology");
  options.slot_secret = secret;
  boost::asio::io_context io;
  auto probe = kc::ClusterClient::Create(io, options);
  std::optional<kc::Error> failure;
  probe->AsyncStart([&](std::optional<kc::Error> e) {
    failure = std::move(e);
    probe->Close();
  });
  io.run();
  if (failure) return Fail("cannot fetch the topology: " + failure->message());
  if (!probe->router().view().cluster) {
    if (o.cluster == ClusterMode::kOn) {
      return Fail("--cluster on: " + o.host + ":" + std::to_string(o.port) +
                  " answers TOPOLOGY as a single node, not a cluster member");
    }
    return 0;
  }
  target->cluster = true;
  target->cluster_options = options;
  // The probe's finding saves every load thread's client from probing again.
  target->cluster_options.slot_mode = probe->slot_mode();
  switch (probe->slot_mode()) {
    case kc::SlotMode::kKeyed:
      *slot_mode = "keyed";
      break;
    case kc::SlotMode::kCrc16:
      *slot_mode = "crc16";
      break;
    default:
      *slot_mode = "none";
      if (!o.quiet) {
        std::fprintf(stderr,
                     "keep-bench: keys are not placed by the client (keyed slots need the "
                     "cluster secret: --secret-file or KEEP_SECRET); each request follows MOVED\n");
      }
  }
  return 0;
}

}  // namespace

std::string BinaryUnsupported(const Options& o) {
  if (o.workload == WorkloadKind::kRateLimit && o.ratelimit_form == RateLimitForm::kLua) {
    return "--protocol binary: the Lua rate-limit recipe has no binary op (the binary protocol's "
           "FIXED_WINDOW is the native form: use --ratelimit-form native)";
  }
  if ((o.workload == WorkloadKind::kLock || o.workload == WorkloadKind::kCoord) &&
      o.lock_release == LockRelease::kLua) {
    return "--protocol binary: the Lua lock release has no binary op (LOCK/UNLOCK are the native "
           "form: use --lock-release native)";
  }
  return "";
}

int RunBinary(const Options& o) {
  if (std::string why = BinaryUnsupported(o); !why.empty()) {
    std::fprintf(stderr, "keep-bench: %s\n", why.c_str());
    return 1;
  }
  Results results;
  Target target;
  if (int rc = ChooseTarget(o, &target, &results.slot_mode); rc != 0) return rc;
  results.cluster = target.cluster;
  kc::ClusterStats populate_stats;
  if (o.populate_only || (o.populate && WorkloadReadsKeys(o.workload))) {
    if (int rc = Populate(o, target, &results.populated, &populate_stats); rc != 0) return rc;
    if (o.populate_only) {
      if (o.json && target.cluster) {
        std::printf("{\"populated\":%llu,\"cluster\":true,\"moved\":%llu}\n",
                    static_cast<unsigned long long>(results.populated),
                    static_cast<unsigned long long>(populate_stats.moved));
      } else if (o.json) {
        std::printf("{\"populated\":%llu}\n", static_cast<unsigned long long>(results.populated));
      } else if (!o.quiet) {
        std::printf("populated %llu keys\n", static_cast<unsigned long long>(results.populated));
      }
      return 0;
    }
  }
  RunClock clock;
  clock.start_ns = NowNs();
  clock.measure_start_ns = clock.start_ns + static_cast<int64_t>(o.warmup_s * 1e9);
  clock.measure_end_ns = o.requests > 0
                             ? INT64_MAX
                             : clock.measure_start_ns + static_cast<int64_t>(o.duration_s * 1e9);
  const int threads = std::max(1, o.threads);
  const int sockets = o.sockets > 0 ? o.sockets : threads;
  std::vector<ThreadProgress> progress(static_cast<size_t>(threads));
  std::vector<ThreadStats> stats(static_cast<size_t>(threads));
  std::vector<std::unique_ptr<LoadThread>> loads;
  for (int t = 0; t < threads; ++t) {
    uint64_t quota =
        o.requests / static_cast<uint64_t>(threads) +
        (static_cast<uint64_t>(t) < o.requests % static_cast<uint64_t>(threads) ? 1 : 0);
    loads.push_back(std::make_unique<LoadThread>(o, target, clock, quota, &progress[t]));
  }
  // Socket s on thread s % threads; caller i on socket i % sockets.
  std::vector<int> local_index(static_cast<size_t>(sockets));
  std::vector<int> per_thread(static_cast<size_t>(threads), 0);
  for (int s = 0; s < sockets; ++s) {
    loads[static_cast<size_t>(s % threads)]->AddSocket();
    local_index[static_cast<size_t>(s)] = per_thread[static_cast<size_t>(s % threads)]++;
  }
  for (int i = 0; i < o.connections; ++i) {
    int s = i % sockets;
    loads[static_cast<size_t>(s % threads)]->AddCaller(i, local_index[static_cast<size_t>(s)]);
  }
  std::atomic<int> running{threads};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      loads[static_cast<size_t>(t)]->Run(&stats[static_cast<size_t>(t)]);
      running.fetch_sub(1);
    });
  }
  const bool long_run = o.requests > 0 || o.warmup_s + o.duration_s > 3;
  uint64_t last_replies = 0;
  int64_t next_tick = clock.start_ns + 1'000'000'000;
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    int64_t now = NowNs();
    if (now < next_tick) continue;
    uint64_t replies = 0;
    for (auto& p : progress) replies += p.replies.load(std::memory_order_relaxed);
    if (!o.quiet && long_run) {
      std::fprintf(stderr, "keep-bench: %5.1fs %10llu req/s  replies %llu%s\n",
                   static_cast<double>(now - clock.start_ns) / 1e9,
                   static_cast<unsigned long long>(replies - last_replies),
                   static_cast<unsigned long long>(replies),
                   now < clock.measure_start_ns ? "  (warm-up)" : "");
    }
    last_replies = replies;
    next_tick += 1'000'000'000;
  }
  for (auto& w : workers) w.join();
  int64_t last_reply = clock.measure_start_ns;
  for (ThreadStats& s : stats) {
    if (!s.fatal.empty()) return Fail(s.fatal);
    results.histogram.Merge(s.histogram);
    results.requests += s.measured;
    results.requests_total += s.total;
    results.errors += s.errors;
    results.nils += s.nils;
    results.follow_ups += s.follow_ups;
    results.unfinished += s.unfinished;
    last_reply = std::max(last_reply, s.last_reply_ns);
    if (results.first_error.empty()) results.first_error = s.first_error;
  }
  kc::ClusterStats cluster = populate_stats;
  for (const auto& load : loads) {
    kc::ClusterStats s = load->ClusterTotals();
    cluster.moved += s.moved;
    cluster.busy_retries += s.busy_retries;
    cluster.fenced_retries += s.fenced_retries;
    cluster.connection_retries += s.connection_retries;
    cluster.refreshes += s.refreshes;
  }
  results.moved = cluster.moved;
  results.busy_retries = cluster.busy_retries;
  results.fenced_retries = cluster.fenced_retries;
  results.connection_retries = cluster.connection_retries;
  results.topology_refreshes = cluster.refreshes;
  results.seconds = o.requests > 0 ? static_cast<double>(last_reply - clock.measure_start_ns) / 1e9
                                   : o.duration_s;
  results.throughput =
      results.seconds > 0 ? static_cast<double>(results.requests) / results.seconds : 0;
  if (o.json) {
    std::printf("%s\n", FormatJson(o, results).c_str());
  } else {
    std::fputs(FormatTable(o, results).c_str(), stdout);
  }
  if (results.errors > 0 && !o.quiet) {
    std::fprintf(stderr, "keep-bench: %llu error replies (first: %s)\n",
                 static_cast<unsigned long long>(results.errors), results.first_error.c_str());
  }
  return 0;
}

}  // namespace keep::bench
