#include "dataplane/shard/shard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "dataplane/commands/glob_util.h"
#include "dataplane/commands/memory_guard.h"
#include "dataplane/proto/reply_writer.h"
#include "dataplane/shard/shard_group.h"
#include "telemetry/cycle_clock.h"

namespace keep::shard {

namespace {

constexpr size_t kReadSize = 64 * 1024;
// A turn reads every ready connection before executing any (see Turn): those without held input
// read into one buffer, each into a window of its own of kScratchReadSize, all in one batch
// (SocketBatch); a connection with more to send is read again next turn, into its own buffer.
constexpr size_t kScratchReadSize = 16 * 1024;
constexpr size_t kTurnInputSize = 64 * kScratchReadSize;
// A pending large bulk may be read in bigger steps: it is one request, so fairness is unharmed.
constexpr size_t kLargeReadSize = 1024 * 1024;
constexpr int kMaxEvents = 256;
// The tick (Timers) comes from a periodic timerfd among the shard's epoll events, so a shard with
// nothing else to wait for blocks without a timeout: an epoll_wait that times out arms and cancels
// a kernel timer on every sleep, about 1 us each on this VM (4-5% of a request's CPU at 20k
// requests/s, measured against the same build waiting with a timeout).
constexpr int kTimerPeriodMs = 100;
// Backpressure (design §2.4): a connection with this many replies owed or this much unsent
// output is not read until its client catches up.
constexpr size_t kMaxPendingReplies = 1024;
constexpr size_t kOutputPauseBytes = 4 * 1024 * 1024;
constexpr size_t kKeepInputCapacity = 256 * 1024;
constexpr size_t kKeepOutputCapacity = 1024 * 1024;
// ... until the connection has been quiet this long; then only what an empty string holds.
constexpr int64_t kIdleBuffersMs = 2000;
constexpr size_t kIdleBuffersKept = 64;
// Replies that follow one still being computed on another shard share a slot up to this size.
// Replies held back while a connection waits for a reply from another shard (see WriteAll).
constexpr size_t kDeferredOutputBytes = 64 * 1024;
constexpr int64_t kStopFlushMs = 2000;
// Expiry sweep work per turn and per idle tick (entries examined).
constexpr size_t kExpireBudgetPerTurn = 64;
constexpr size_t kExpireBudgetPerTick = 4096;
// Records defragmentation may move per turn and per idle tick, before Store::DefragSome scales
// it with the fragmentation: tens of microseconds a turn, paid only while the slab is fragmented.
// Less per turn lets keys whose size drifts under eviction outgrow the cap by more than 10%.
constexpr size_t kDefragBudgetPerTurn = 256;
constexpr size_t kDefragBudgetPerTick = 256;
// Background work in a turn (the expiry sweep, defragmentation) runs in slices, none started
// after this much time in the turn, so a request that arrives meanwhile waits about this long
// behind it at most. What is left goes on next turn: a shard with expired keys or fragmentation
// to reclaim parks for kBackgroundPeriodMs at most (not at all under an expiry backlog), so the
// slices set how long a request may wait, not how fast the work goes. (A full budget of either took
// milliseconds here, each expired key examined or record moved being a few cache misses:
// defragmentation after mass expiry moved 2048 records a turn and held turns for up to 4 ms.)
constexpr double kBackgroundWorkUs = 100;
constexpr size_t kExpireSlice = 512;
constexpr size_t kDefragSlice = 16;  // up to 8x that many moves (Store::DefragSome)
constexpr int kBackgroundPeriodMs = 1;
// Keys evicted per turn while the shard is over its memory share.
constexpr size_t kEvictBudgetPerTurn = 64;
// A shard that finds work waiting every time it looks, but only one or two connections' worth, is
// saturated one request at a time: each turn pays its three system calls (about 1 us each on this
// VM) for a request or two, and the time a turn saves only buys more, smaller turns (the client
// sets the pace). Pausing that long before the next look lets the next turn find several
// connections ready. Measured at pipeline 1, 50 connections: server CPU per request 16-21% lower,
// throughput and latency as good or better. Only a shard busy nearly all the time pauses: one that
// blocks in its wait between requests (at a modest open-loop rate) never makes a request wait.
constexpr long kCoalesceNs = 20'000;
constexpr int kCoalesceBelowEvents = 3;
constexpr double kSaturatedRunShare = 0.9;
constexpr double kWaitBlockedUs = 5;  // a wait that took longer than this slept

// Requests one connection runs per turn (Redis runs what one 16 KiB read holds, about as many).
constexpr int kCommandsPerTurn = 256;

// A turn's batch of requests for one shard is sent early once it holds this many requests or
// bytes, so the other shard starts on them sooner and a pooled batch's buffers stay small.
constexpr size_t kBatchRequests = 256;
constexpr size_t kBatchBytes = 64 * 1024;
// Pooled envelopes keep buffers up to this capacity.
constexpr size_t kKeepEnvelopeCapacity = 128 * 1024;
// ... and, at each tick, no more than twice what the tick's largest batch needed (at least this):
// a burst's buffers go back once it is over, even while light traffic still crosses shards.
constexpr size_t kIdleEnvelopeCapacity = 64;

// What a batch carries before each forwarded request's argument lengths and bytes.
struct ForwardHeader {
  const commands::CommandSpec* spec;
  uint64_t caller_id;
  uint32_t key_slot;
  uint32_t arg_count;
  uint32_t resp_version;
  uint32_t zero_padding = 0;  // the header is copied as bytes: no indeterminate padding in it
};
static_assert(std::has_unique_object_representations_v<ForwardHeader>);

// Writes `value` at `at`, wherever in a batch it falls (unaligned).
template <class T>
void StoreAt(char* at, T value) {
  std::memcpy(at, &value, sizeof(value));
}

// Copies `bytes` to `to`: the arguments a shard forwards are mostly a command name and a short key,
// for which two overlapping word moves cost less than the call into memcpy.
char* CopyBytes(char* to, std::string_view bytes) {
  const size_t n = bytes.size();
  const char* from = bytes.data();
  if (n >= 4 && n <= 16) {
    if (n >= 8) {
      uint64_t head, tail;
      std::memcpy(&head, from, 8);
      std::memcpy(&tail, from + n - 8, 8);
      std::memcpy(to, &head, 8);
      std::memcpy(to + n - 8, &tail, 8);
    } else {
      uint32_t head, tail;
      std::memcpy(&head, from, 4);
      std::memcpy(&tail, from + n - 4, 4);
      std::memcpy(to, &head, 4);
      std::memcpy(to + n - 4, &tail, 4);
    }
  } else if (n > 0) {
    std::memcpy(to, from, n);
  }
  return to + n;
}

// An envelope's buffers were last written on another core: asking for all of their lines at
// once overlaps the transfers instead of taking them one miss at a time as the bytes are read.
void PrefetchShared(const void* data, size_t size) {
  constexpr size_t kMaxPrefetchBytes = 16 * 1024;
  const char* p = static_cast<const char*>(data);
  const size_t end = std::min(size, kMaxPrefetchBytes);
  for (size_t offset = 0; offset < end; offset += 64) __builtin_prefetch(p + offset);
}

// epoll data for things that are not connections: small integers never valid as pointers.
constexpr uint64_t kWakeTag = 1;
constexpr uint64_t kTickTag = 2;
constexpr uint64_t kListenTagBase = 16;

void PackArgs(std::span<const std::string_view> args, std::string* bytes,
              std::vector<uint32_t>* ends) {
  bytes->clear();
  ends->clear();
  for (std::string_view arg : args) {
    bytes->append(arg);
    ends->push_back(static_cast<uint32_t>(bytes->size()));
  }
}

void UnpackArgs(const std::string& bytes, const std::vector<uint32_t>& ends,
                std::vector<std::string_view>* args) {
  args->clear();
  uint32_t start = 0;
  for (uint32_t end : ends) {
    args->emplace_back(bytes.data() + start, end - start);
    start = end;
  }
}

std::string SocketAddress(int fd, bool peer) {
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &length)
                : getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  if (rc != 0) return "?:0";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (storage.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  } else if (storage.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

bool IsAuthExempt(std::string_view name) {
  auto equals = [&](std::string_view word) {
    if (name.size() != word.size()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(name[i])) != word[i]) return false;
    }
    return true;
  };
  return equals("auth") || equals("hello") || equals("quit") || equals("reset");
}

// RESP2 connections with subscriptions are in Redis's "subscribed" mode.
bool AllowedWhileSubscribed(std::string_view name) {
  static constexpr std::string_view kAllowed[] = {"subscribe",    "unsubscribe", "psubscribe",
                                                  "punsubscribe", "ssubscribe",  "sunsubscribe",
                                                  "ping",         "quit",        "reset"};
  for (std::string_view allowed : kAllowed) {
    if (name == allowed) return true;
  }
  return false;
}

}  // namespace

Shard::Shard(ShardGroup* group, ShardOptions options)
    : group_(group),
      options_(std::move(options)),
      table_(commands::CommandTable::Default()),
      metrics_(group->metrics().shard(options_.index)),
      scratch_(std::make_unique_for_overwrite<char[]>(kTurnInputSize)),
      sockets_(kMaxEvents, options_.io_uring),
      random_state_(0x9e3779b97f4a7c15ull * (options_.index + 1) ^ core::MonotonicNanos()),
      background_ticks_(
          static_cast<uint64_t>(telemetry::CycleClock::TicksPerSecond() * kBackgroundWorkUs / 1e6)),
      wait_blocked_ticks_(
          static_cast<uint64_t>(telemetry::CycleClock::TicksPerSecond() * kWaitBlockedUs / 1e6)),
      us_per_tick_(1e6 / telemetry::CycleClock::TicksPerSecond()) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  // Edge-triggered: every write is an event of its own, so the counter never needs reading back
  // (a read per wake-up was a syscall per cross-shard round trip at pipeline 1).
  epoll_event event{};
  event.events = EPOLLIN | EPOLLET;
  event.data.u64 = kWakeTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event);
  // Read at each expiry: a periodic timerfd arms its next expiry when read.
  tick_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (tick_fd_ < 0) {
    // Without its tick a shard would stop publishing metrics and timing out idle clients.
    std::perror("keep: timerfd for the shard's tick");
    std::abort();
  }
  const timespec period{.tv_sec = kTimerPeriodMs / 1000,
                        .tv_nsec = (kTimerPeriodMs % 1000) * 1'000'000L};
  const itimerspec every_period{.it_interval = period, .it_value = period};
  timerfd_settime(tick_fd_, 0, &every_period, nullptr);
  epoll_event tick_event{};
  tick_event.events = EPOLLIN;
  tick_event.data.u64 = kTickTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, tick_fd_, &tick_event);
  for (size_t i = 0; i < options_.listen_fds.size(); ++i) {
    epoll_event listen_event{};
    listen_event.events = EPOLLIN;
    listen_event.data.u64 = kListenTagBase + i;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, options_.listen_fds[i], &listen_event);
  }
  outbound_.resize(options_.count);
  open_batches_.assign(options_.count, nullptr);
  unsent_forwards_.assign(options_.count, 0);
  wake_owed_.assign(options_.count, 0);
  store_.SetKeyClasses(options_.key_classes);
  store_.SetMemoryLimit(group_->maxmemory_share());
  store_.UsePrefaulter(&group_->prefaulter(), options_.index);
}

Shard::~Shard() {
  for (auto& [id, conn] : connections_) {
    if (conn->fd >= 0) close(conn->fd);
  }
  for (int fd : options_.listen_fds) {
    if (fd >= 0) close(fd);
  }
  close(wake_fd_);
  close(tick_fd_);
  close(epoll_fd_);
  for (Envelope* e : envelope_pool_) delete e;
  for (PendingReply* s : slot_pool_) delete s;
  for (Gather* g : gather_pool_) delete g;
}

void Shard::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Shard::Join() {
  if (thread_.joinable()) thread_.join();
}

void Shard::Wake() {
  if (parked_.load(std::memory_order_seq_cst) && parked_.exchange(false)) {
    uint64_t one = 1;
    ssize_t ignored = write(wake_fd_, &one, sizeof(one));
    (void)ignored;
  }
}

void Shard::Run() {
  char name[16];
  snprintf(name, sizeof(name), "keep-shard-%d", options_.index);
  pthread_setname_np(pthread_self(), name);
  if (options_.pin_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(options_.pin_cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  // The coalescing pause (kCoalesceNs) ends when asked, not up to the default 50 us later.
  prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);
  now_ms_ = clock_.NowMillis();
  while (true) {
    if (!stopping_ && group_->stop_requested()) BeginStop();
    if (stopping_) {
      if (!reported_drained_ && (Drained() || now_ms_ >= stop_deadline_ms_)) {
        reported_drained_ = true;
        group_->ReportDrained();
      }
      // Keep serving the rings until every shard is done: others may still need our replies.
      if (reported_drained_ && group_->AllDrained()) break;
    }
    // Still over the memory cap after a turn that evicted, or expired keys piling up faster
    // than a slice a period reclaims: go on next turn without parking.
    bool busy = evicting_ || expiry_backlog_ || !resume_list_.empty() || HasOutbound() ||
                group_->tasks().HasWork(options_.index);
    int timeout = busy ? 0 : kWaitForEvents;
    if (expiring_ || defragmenting_) timeout = SoonerTimeout(timeout, kBackgroundPeriodMs);
    if (stopping_) timeout = SoonerTimeout(timeout, 10);
    timeout = BinaryTimeoutMs(timeout);
    Turn(timeout);
  }
  std::vector<Connection*> open;
  for (auto& [id, conn] : connections_) open.push_back(conn.get());
  for (Connection* conn : open) Close(conn, nullptr);
}

void Shard::Turn(int timeout_ms) {
  epoll_event events[kMaxEvents];
  if (timeout_ms != 0) {
    parked_.store(true, std::memory_order_seq_cst);
    // A producer that pushed before seeing the flag did not wake us: look once more.
    for (int from = 0; from < options_.count; ++from) {
      if (from != options_.index && !group_->ring(from, options_.index).Empty()) {
        timeout_ms = 0;
        break;
      }
    }
    if (group_->tasks().HasWork(options_.index)) timeout_ms = 0;
  }
  if (coalescing_ && timeout_ms != 0) {
    const timespec pause{.tv_sec = 0, .tv_nsec = kCoalesceNs};
    nanosleep(&pause, nullptr);
  }
  const uint64_t wait_start = telemetry::CycleClock::Now();
  int ready = epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
  const uint64_t wait_end = telemetry::CycleClock::Now();
  parked_.store(false, std::memory_order_relaxed);
  now_ms_ = clock_.NowMillis();
  store_.SetNow(now_ms_);
  // CONFIG SET maxmemory on any shard applies from this shard's next turn.
  store_.SetMemoryLimit(group_->maxmemory_share());
  if (cluster::ViewPublisher* views = group_->views()) {
    view_ = views->BeginTurn(options_.index);
    if (view_ != nullptr && view_->epoch != applied_epoch_) ApplyView();
  }

  // Replies other shards wrote to this shard's sockets themselves come back without waking it; a
  // client that has its reply may already have sent its next request, which must find the
  // connection's accounts settled (else it could not be answered directly in turn).
  DrainInbound();
  for (int i = 0; i < ready; ++i) {
    uint64_t tag = events[i].data.u64;
    if (tag == kWakeTag) continue;
    if (tag == kTickTag) {
      uint64_t expirations = 0;
      if (read(tick_fd_, &expirations, sizeof(expirations)) > 0) tick_due_ = true;
      continue;
    }
    if (tag >= kListenTagBase && tag < kListenTagBase + options_.listen_fds.size()) {
      Accept(options_.listen_fds[tag - kListenTagBase]);
      continue;
    }
    auto* conn = reinterpret_cast<Connection*>(events[i].data.ptr);
    if (conn->closed) continue;
    if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
      if (scratch_used_ + kScratchReadSize > kTurnInputSize || sockets_.full()) {
        FinishReads();
        RunReadInput();
      }
      OnReadable(conn);
    }
    if (!conn->closed && (events[i].events & EPOLLOUT)) MarkWrite(conn);
  }
  FinishReads();
  RunReadInput();

  // Connections with input they already hold: paused ones that may go on, and ones that used up
  // their share of the last turn. Those that use it up again go on next turn.
  resuming_.swap(resume_list_);
  for (Connection* conn : resuming_) {
    conn->in_resume_list = false;
    if (conn->closed || InputPaused(conn)) continue;
    UpdateInterest(conn);
    if (!conn->in.empty()) ProcessInput(conn, conn->in.readable(), false);
  }
  resuming_.clear();

  FlushOutbound();
  DrainInbound();
  FlushOutbound();
  // The turn's replies leave before its background work (handoff batches, expiry, eviction,
  // defragmentation, the tick), which may take up to kBackgroundWorkUs: a request never waits
  // for that behind the system call that answers it. What the background work itself writes
  // (events, redirects, heartbeats) goes out at the end of the turn.
  WriteAll();
  // Only now, after the turn's sends: waking a parked shard is an eventfd write whose wake-up
  // interrupts the other CPU, and on a virtual machine this thread spent ~8 us in it (perf's
  // CPU-clock samples, little of it billed to the process: parking with a timeout instead of
  // waking did not lower its CPU per request). Made before the sends, it held the turn's replies
  // back by as much; two shards at pipeline 1 spent 3-4% less CPU per request waking here (GET,
  // SET; 8 and 4 alternating pairs).
  WakeOwed();
  // Control-thread tasks (handoff batches): a few per turn, each bounded by its own budget.
  if (group_->tasks().HasWork(options_.index)) {
    group_->tasks().RunSome(options_.index, store_, slot_table_, clock_);
  }

  const uint64_t background_deadline = telemetry::CycleClock::Now() + background_ticks_;
  if (store_.KeysWithExpiry() > 0) {
    // While the sweep keeps finding expired keys, give it a tick's budget every turn and come
    // back within kBackgroundPeriodMs (as Redis repeats its active expire cycle while a quarter
    // of its samples were expired); when half of what it examines has expired, without parking.
    // Mass expiry is reclaimed in seconds, in bounded steps, and other processes keep the CPU
    // time a shard does not need for it.
    const size_t budget = expiring_ ? kExpireBudgetPerTick : kExpireBudgetPerTurn;
    size_t examined = 0;
    const size_t erased = ExpireFor(budget, background_deadline, &examined);
    expiring_ = erased >= examined / 8;
    expiry_backlog_ = erased >= examined / 2;
  } else {
    expiring_ = false;
    expiry_backlog_ = false;
    // ExpireSome does this otherwise: unmap released chunks, keep a warm spare ready, so a store
    // growing without TTLs never maps and faults in a chunk in the middle of a request.
    store_.Maintain();
  }
  EnforceMemoryCap();
  DefragFor(kDefragBudgetPerTurn, background_deadline);
  if (tick_due_) {
    tick_due_ = false;
    Timers(background_deadline);
  }
  BinaryTick();
  WriteAll();
  const uint64_t turn_end = telemetry::CycleClock::Now();
  const auto turn_us =
      static_cast<uint64_t>(static_cast<double>(turn_end - wait_end) * us_per_tick_);
  // How busy the shard is, over its last turns or so: time running turns against time blocked in
  // the wait (the pause counts as neither, nor does a wait that returned at once: that is the
  // system call's own cost). Saturated and finding little work per look, it pauses before the
  // next look (kCoalesceNs).
  const uint64_t waited = wait_end - wait_start;
  recent_wait_ticks_ =
      recent_wait_ticks_ - recent_wait_ticks_ / 8 + (waited > wait_blocked_ticks_ ? waited : 0);
  recent_run_ticks_ = recent_run_ticks_ - recent_run_ticks_ / 8 + (turn_end - wait_end);
  coalescing_ = ready > 0 && ready < kCoalesceBelowEvents &&
                recent_run_ticks_ > kSaturatedRunShare * (recent_wait_ticks_ + recent_run_ticks_);
  ++stats_.eventloop_cycles;
  stats_.eventloop_duration_sum_us += turn_us;
  stats_.eventloop_duration_max_us = std::max(stats_.eventloop_duration_max_us, turn_us);
  if (!zombies_.empty()) {
    std::erase_if(zombies_, [](const std::unique_ptr<Connection>& c) { return c->inflight == 0; });
  }
}

void Shard::Accept(int listen_fd) {
  for (int i = 0; i < 64; ++i) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        fprintf(stderr, "keep-server: accept failed: %s\n", strerror(errno));
      }
      return;
    }
    ++stats_.total_connections_received;
    if (stopping_ || !group_->AdmitClient()) {
      static constexpr char kFull[] = "-ERR max number of clients reached\r\n";
      ssize_t ignored = send(fd, kFull, sizeof(kFull) - 1, MSG_NOSIGNAL);
      (void)ignored;
      close(fd);
      ++stats_.rejected_connections;
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto conn = std::make_unique<Connection>(options_.resp_limits);
    conn->fd = fd;
    conn->client.id = group_->NextClientId();
    conn->client.fd = fd;
    conn->client.shard = options_.index;
    conn->client.created_ms = now_ms_;
    conn->client.last_interaction_ms = now_ms_;
    conn->client.addr = SocketAddress(fd, true);
    conn->client.laddr = SocketAddress(fd, false);
    conn->client.authenticated = options_.command_limits.requirepass.empty();
    conn->epoll_events = EPOLLIN;
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.ptr = conn.get();
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
    ++stats_.connected_clients;
    connections_.emplace(conn->client.id, std::move(conn));
  }
}

void Shard::OnReadable(Connection* conn) {
  if (conn->close_after_flush || InputPaused(conn)) {
    UpdateInterest(conn);
    return;
  }
  // It still holds input it had no turn for: that goes first, this turn's resume pass runs it.
  if (conn->in_resume_list) return;
  const bool use_scratch = conn->in.empty();
  size_t want = use_scratch ? kScratchReadSize : kReadSize;
  if (!use_scratch && conn->parse_needed > conn->in.size() + kReadSize) {
    want = std::min(conn->parse_needed - conn->in.size(), kLargeReadSize);
  }
  char* target = use_scratch ? scratch_.get() + scratch_used_ : conn->in.PrepareWrite(want);
  if (use_scratch) scratch_used_ += want;  // the window is this read's until the batch has run
  sockets_.Recv(conn->fd, target, want);
  pending_reads_.push_back({conn, target});
}

void Shard::FinishReads() {
  std::span<const ssize_t> results = sockets_.Run();
  for (size_t i = 0; i < results.size(); ++i) {
    const auto [conn, target] = pending_reads_[i];
    if (!conn->closed) FinishRead(conn, target, results[i]);
  }
  pending_reads_.clear();
}

void Shard::FinishRead(Connection* conn, char* target, ssize_t n) {
  if (n == 0) {
    Close(conn, nullptr);
    return;
  }
  if (n < 0) {
    if (n == -EAGAIN || n == -EINTR) return;
    Close(conn, nullptr);
    return;
  }
  stats_.net_input_bytes += n;
  conn->client.last_interaction_ms = now_ms_;
  const bool use_scratch = target >= scratch_.get() && target < scratch_.get() + kTurnInputSize;
  if (use_scratch) {
    read_input_.push_back({conn, std::string_view(target, n), true});
  } else {
    conn->in.Commit(n);
    if (conn->parse_needed > conn->in.size()) {
      if (conn->in.size() > static_cast<size_t>(options_.client_query_buffer_limit)) {
        Close(conn, "query buffer limit reached");
      }
      return;
    }
    read_input_.push_back({conn, conn->in.readable(), false});
  }
}

void Shard::RunReadInput() {
  // Without a pipeline a connection brings one request a turn, and its lookup's cache misses
  // (table group, then record: most of a GET's user time at pipeline 1) have nothing to overlap
  // with inside ProcessInput. Fetching the first key of each of kRequestBatch connections before
  // running them overlaps those misses across connections instead.
  for (size_t first = 0; first < read_input_.size(); first += kRequestBatch) {
    const size_t last = std::min(read_input_.size(), first + kRequestBatch);
    size_t keys = 0;
    for (size_t i = first; i < last; ++i) {
      std::string_view key;
      if (proto::PeekMultibulkArgument(read_input_[i].data, 1, &key) && OwnsKey(key)) {
        batch_keys_[keys++] = key;
      }
    }
    store_.PrefetchKeys(std::span(batch_keys_.data(), keys));
    store_.ForgetKeyHashes();
    for (size_t i = first; i < last; ++i) {
      const ReadInput& input = read_input_[i];
      // Closed by a request of a connection that ran before it (CLIENT KILL).
      if (!input.conn->closed) ProcessInput(input.conn, input.data, input.from_scratch);
    }
  }
  read_input_.clear();
  scratch_used_ = 0;
}

bool Shard::Admitting(const Connection* conn) const {
  return !conn->closed && !conn->close_after_flush && !InputPaused(conn);
}

void Shard::ProcessInput(Connection* conn, std::string_view data, bool from_scratch) {
  // The first byte picks the protocol (design §2.3): 0x00-0x1f binary, anything else RESP.
  if (!conn->protocol_known && !data.empty()) {
    conn->protocol_known = true;
    if (static_cast<unsigned char>(data[0]) < 0x20) {
      conn->binary = std::make_unique<BinaryState>(options_.binary_limits);
    }
  }
  if (conn->binary != nullptr) return BinaryInput(conn, data, from_scratch);
  // Pipelined requests are parsed up to kRequestBatch at a time, their keys' table groups and
  // then records prefetched, and only then executed: the lookups' cache misses (most of a
  // pipelined GET's user time) then overlap instead of coming one after another.
  // A connection runs at most kCommandsPerTurn requests per turn, so one client's deep pipeline
  // (a bulk load) delays the others' requests by a bounded amount instead of by all of its input.
  size_t offset = 0;
  int budget = kCommandsPerTurn;
  bool more = true;
  while (more && offset < data.size() && Admitting(conn)) {
    if (budget <= 0) {
      if (!conn->in_resume_list) {
        conn->in_resume_list = true;
        resume_list_.push_back(conn);
      }
      break;
    }
    batch_args_.clear();
    int parsed = 0;
    size_t position = offset;
    proto::ParseStatus status = proto::ParseStatus::kComplete;
    while (parsed < std::min(kRequestBatch, budget) && position < data.size()) {
      size_t consumed = 0;
      const auto first_arg = static_cast<uint32_t>(batch_args_.size());
      status = conn->parser.ParseAppending(data.substr(position), &batch_args_, &consumed);
      if (status != proto::ParseStatus::kComplete) break;
      // An inline request's arguments may live in the parser's scratch, which the next Parse
      // reuses: it ends the batch.
      const bool is_inline = data[position] != '*';
      position += consumed;
      batch_[parsed++] = {first_arg, static_cast<uint32_t>(batch_args_.size()) - first_arg,
                          position, commands::kNoSlot};
      if (is_inline) break;
    }
    // Only keys this shard owns are worth fetching: with several shards the slot that tells is
    // computed once, here, and handed to PlanRequest.
    size_t keys = 0;
    for (int i = 0; i < parsed; ++i) {
      if (batch_[i].arg_count < 2) continue;
      const std::string_view key = batch_args_[batch_[i].first_arg + 1];
      if (options_.count > 1) {
        batch_[i].arg1_slot = group_->slot_function()(key);
        if (commands::ShardOfSlot(batch_[i].arg1_slot, options_.count) != options_.index) continue;
      }
      batch_keys_[keys++] = key;
    }
    store_.PrefetchKeys(std::span(batch_keys_.data(), keys));
    for (int i = 0; i < parsed; ++i) {
      if (i > 0 && !Admitting(conn)) {
        more = false;
        break;
      }
      conn->parse_needed = 0;
      offset = batch_[i].end;
      if (batch_[i].arg_count == 0) continue;
      ++stats_.total_commands_processed;
      --budget;
      Dispatch(conn,
               std::span<const std::string_view>(batch_args_.data() + batch_[i].first_arg,
                                                 batch_[i].arg_count),
               batch_[i].arg1_slot);
    }
    store_.ForgetKeyHashes();
    if (!more || status == proto::ParseStatus::kComplete) continue;
    if (status == proto::ParseStatus::kIncomplete) {
      if (Admitting(conn)) conn->parse_needed = conn->parser.needed();
      break;
    }
    if (status == proto::ParseStatus::kError && Admitting(conn)) {
      proto::ReplyWriter writer(ReplyTarget(conn), conn->client.resp_version);
      writer.Error(conn->parser.error());
      conn->close_after_flush = true;
      MarkWrite(conn);
      offset = data.size();
      break;
    }
  }
  if (conn->closed) return;
  if (from_scratch) {
    if (offset < data.size()) conn->in.Append(data.substr(offset));
  } else {
    conn->in.Consume(offset);
    conn->in.ShrinkIfEmpty(kKeepInputCapacity);
  }
  if (conn->in.size() > static_cast<size_t>(options_.client_query_buffer_limit)) {
    Close(conn, "query buffer limit reached");
    return;
  }
  AccountBuffers(conn);
  if (InputPaused(conn)) UpdateInterest(conn);
}

std::string* Shard::ReplyTarget(Connection* conn) {
  MarkWrite(conn);
  if (conn->direct_in_flight) AwaitDirect(conn);
  if (conn->binary != nullptr) return &conn->binary->resp;
  return conn->pending.empty() ? &conn->out : &conn->held;
}

PendingReply* Shard::Owe(Connection* conn) {
  if (conn->direct_in_flight) AwaitDirect(conn);
  PendingReply* slot = NewSlot();
  if (conn->binary != nullptr) {
    BinaryDefer(conn, slot);
  } else {
    slot->held_offset = conn->held.size();
    conn->pending.push_back(slot);
  }
  ++conn->inflight;
  return slot;
}

void Shard::MoveHeld(Connection* conn, size_t up_to) {
  conn->out.append(conn->held, conn->held_moved, up_to - conn->held_moved);
  conn->held_moved = up_to;
}

void Shard::Dispatch(Connection* conn, std::span<const std::string_view> args, uint32_t arg1_slot) {
  if (!conn->client.authenticated && !IsAuthExempt(args[0])) {
    proto::ReplyWriter(ReplyTarget(conn), conn->client.resp_version)
        .Error("NOAUTH Authentication required.");
    return;
  }
  commands::PlanRequest(table_, args, group_->slot_function(), options_.count, &plan_, arg1_slot,
                        view_ != nullptr);
  // As Redis: the command's own name, or NULL after an unknown one.
  conn->client.last_command = plan_.spec != nullptr ? plan_.spec->name : std::string_view();
  if (!plan_.error.empty()) {
    proto::ReplyWriter(ReplyTarget(conn), conn->client.resp_version).Error(plan_.error);
    return;
  }
  const commands::CommandSpec* spec = plan_.spec;
  if (conn->client.resp_version == 2 && conn->client.Subscribed() &&
      !AllowedWhileSubscribed(spec->name)) {
    proto::ReplyWriter(ReplyTarget(conn), 2)
        .Error("ERR Can't execute '" + std::string(spec->name) +
               "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
               "this context");
    return;
  }
  if (view_ != nullptr && !ClusterAdmits(conn)) return;
  switch (plan_.routing) {
    case commands::Routing::kLocal: {
      proto::ReplyWriter writer(ReplyTarget(conn), conn->client.resp_version);
      commands::CommandContext ctx{.store = store_,
                                   .now_ms = now_ms_,
                                   .wall_drift_ms = clock_.wall_drift_ms(),
                                   .args = args,
                                   .reply = writer,
                                   .limits = options_.command_limits,
                                   .client = &conn->client,
                                   .services = this,
                                   .shard_index = options_.index,
                                   .shard_count = options_.count,
                                   .caller_id = conn->client.id,
                                   .slots = &slot_table_,
                                   .view = view_,
                                   .slot_of = &group_->slot_function()};
      Execute(spec, ctx);
      if (conn->client.close_after_reply) conn->close_after_flush = true;
      return;
    }
    case commands::Routing::kSingleKey:
      if (plan_.shard == options_.index) {
        proto::ReplyWriter writer(ReplyTarget(conn), conn->client.resp_version);
        commands::CommandContext ctx{.store = store_,
                                     .now_ms = now_ms_,
                                     .wall_drift_ms = clock_.wall_drift_ms(),
                                     .args = args,
                                     .reply = writer,
                                     .limits = options_.command_limits,
                                     .services = this,
                                     .shard_index = options_.index,
                                     .shard_count = options_.count,
                                     .caller_id = conn->client.id,
                                     .slot = plan_.slot,
                                     .slots = &slot_table_,
                                     .view = view_,
                                     .slot_of = &group_->slot_function()};
        Execute(spec, ctx);
        return;
      }
      break;
    case commands::Routing::kCursorShard:
    case commands::Routing::kEachKey:
    case commands::Routing::kAllShards:
      StartGather(conn, args);
      return;
  }
  Forward(conn, plan_.shard, args);
}

void Shard::Forward(Connection* conn, int target, std::span<const std::string_view> args) {
  Envelope*& batch = open_batches_[target];
  if (batch == nullptr) {
    batch = NewEnvelope();
    batch->origin = static_cast<uint16_t>(options_.index);
    batch->target = static_cast<uint16_t>(target);
  }
  IoBuffer& out = batch->requests;
  size_t size = sizeof(ForwardHeader) + args.size() * sizeof(uint32_t);
  for (std::string_view arg : args) size += arg.size();
  char* cursor = out.PrepareWrite(size);
  out.Commit(size);
  // Field by field into the batch: a header built on the stack and copied was stored in small
  // pieces and reloaded in 16-byte ones, which the CPU cannot forward from its store buffer, and
  // that stall was half of this function's time (perf, two shards, GET at pipeline 16).
  using Header = ForwardHeader;
  StoreAt<decltype(Header::spec)>(cursor + offsetof(Header, spec), plan_.spec);
  StoreAt<decltype(Header::caller_id)>(cursor + offsetof(Header, caller_id), conn->client.id);
  StoreAt<decltype(Header::key_slot)>(cursor + offsetof(Header, key_slot), plan_.slot);
  StoreAt<decltype(Header::arg_count)>(cursor + offsetof(Header, arg_count), args.size());
  StoreAt<decltype(Header::resp_version)>(cursor + offsetof(Header, resp_version),
                                          conn->client.resp_version);
  StoreAt<decltype(Header::zero_padding)>(cursor + offsetof(Header, zero_padding), 0);
  cursor += sizeof(ForwardHeader);
  for (std::string_view arg : args) {
    const auto length = static_cast<uint32_t>(arg.size());
    std::memcpy(cursor, &length, sizeof(length));
    cursor += sizeof(length);
  }
  for (std::string_view arg : args) cursor = CopyBytes(cursor, arg);
  batch->waiting.push_back({conn, Owe(conn)});
  ++stats_.cross_shard_requests;
  ++unsent_forwards_[target];
  if (batch->waiting.size() >= kBatchRequests || out.size() >= kBatchBytes) SealBatch(target);
}

void Shard::Execute(const commands::CommandSpec* spec, commands::CommandContext& ctx) {
#ifndef KEEP_METRICS_OFF
  // Every command is counted; one in kLatencySampleEvery is timed (two clock reads). Timing every
  // command cost about 4% of the server CPU of a pipelined GET, well above the noise; a sampled
  // histogram still gives the quantiles, and the counter gives the rates.
  const bool timed = (++commands_seen_ & (telemetry::kLatencySampleEvery - 1)) == 0;
  const uint64_t start = timed ? telemetry::CycleClock::Now() : 0;
  const std::string* out = ctx.reply.buffer();
  size_t before = out->size();
  if (commands::AdmitWrite(*spec, ctx)) {
    spec->handler(ctx);
  } else if (spec->first_key > 0 && ctx.args.size() > static_cast<size_t>(spec->first_key)) {
    size_t klass = options_.key_classes.ClassOf(ctx.args[spec->first_key]);
    if (klass < metrics_.key_class_count()) metrics_.key_class(klass).refused.Add();
  }
  bool error = out->size() > before && ((*out)[before] == '-' || (*out)[before] == '!');
  metrics_.CountCommand(spec->id, error);
  if (timed) metrics_.ObserveDuration(spec->id, telemetry::CycleClock::Now() - start);
#else
  if (commands::AdmitWrite(*spec, ctx)) spec->handler(ctx);
#endif
}

void Shard::RunPart(const commands::CommandSpec* spec, std::span<const std::string_view> args,
                    int resp_version, commands::PartResult* result, bool as_part,
                    uint64_t caller_id, uint64_t cursor_position, uint32_t slot) {
  result->Reset();
  result->cursor = cursor_position;
  proto::ReplyWriter writer(&result->resp, resp_version);
  commands::CommandContext ctx{.store = store_,
                               .now_ms = now_ms_,
                               .wall_drift_ms = clock_.wall_drift_ms(),
                               .args = args,
                               .reply = writer,
                               .limits = options_.command_limits,
                               .part = as_part ? result : nullptr,
                               .services = this,
                               .shard_index = options_.index,
                               .shard_count = options_.count,
                               .caller_id = caller_id,
                               .slot = slot,
                               .slots = &slot_table_,
                               .view = view_,
                               .slot_of = &group_->slot_function()};
  Execute(spec, ctx);
}

void Shard::StartGather(Connection* conn, std::span<const std::string_view> args) {
  Gather* gather = NewGather();
  gather->conn = conn;
  gather->spec = plan_.spec;
  gather->routing = plan_.routing;
  gather->cursor_shard = plan_.shard;
  gather->resp_version = conn->client.resp_version;
  gather->slot = Owe(conn);
  PackArgs(args, &gather->arg_bytes, &gather->arg_ends);
  UnpackArgs(gather->arg_bytes, gather->arg_ends, &gather->args);
  gather->parts.assign(options_.count, nullptr);
  int count = options_.count;
  while (static_cast<int>(gather->spare_results.size()) < count) {
    gather->spare_results.push_back(std::make_unique<commands::PartResult>());
  }
  switch (plan_.routing) {
    case commands::Routing::kCursorShard:
      gather->outstanding = 1;
      SendPart(gather, plan_.shard, gather->args, true, plan_.cursor_position);
      break;
    case commands::Routing::kAllShards:
      gather->outstanding = count;
      for (int shard = 0; shard < count; ++shard) SendPart(gather, shard, gather->args, true, 0);
      break;
    case commands::Routing::kEachKey: {
      size_t keys = plan_.key_arg.size();
      gather->key_part.assign(plan_.key_shard.begin(), plan_.key_shard.end());
      gather->key_pos.resize(keys);
      int step = plan_.spec->key_step;
      // Every shard gets a result, empty where it owns none of the keys, so combiners can
      // treat the parts uniformly.
      gather->outstanding = 0;
      for (int shard = 0; shard < count; ++shard) {
        part_args_.clear();
        part_args_.push_back(gather->args[0]);
        uint32_t position = 0;
        for (size_t k = 0; k < keys; ++k) {
          if (plan_.key_shard[k] != shard) continue;
          gather->key_pos[k] = position++;
          for (int j = 0; j < step; ++j) part_args_.push_back(gather->args[plan_.key_arg[k] + j]);
        }
        if (position == 0) {
          gather->spare_results[shard]->Reset();
          gather->parts[shard] = gather->spare_results[shard].get();
          continue;
        }
        ++gather->outstanding;
        SendPart(gather, shard, part_args_, true, 0);
      }
      break;
    }
    default:
      break;
  }
  if (gather->outstanding == 0) FinishGather(gather);
}

void Shard::SendPart(Gather* gather, int target, std::span<const std::string_view> args,
                     bool as_part, uint64_t cursor_position) {
  if (target == options_.index) {
    commands::PartResult* result = gather->spare_results[target].get();
    RunPart(gather->spec, args, gather->resp_version, result, as_part, gather->conn->client.id,
            cursor_position, 0);
    gather->parts[target] = result;
    --gather->outstanding;
    return;
  }
  Envelope* envelope = NewEnvelope();
  envelope->origin = static_cast<uint16_t>(options_.index);
  envelope->target = static_cast<uint16_t>(target);
  envelope->gather = gather;
  envelope->spec = gather->spec;
  envelope->resp_version = gather->resp_version;
  envelope->caller_id = gather->conn->client.id;
  envelope->cursor_position = cursor_position;
  envelope->as_part = as_part;
  PackArgs(args, &envelope->arg_bytes, &envelope->arg_ends);
  gather->envelopes.push_back(envelope);
  ++stats_.cross_shard_requests;
  ++unsent_forwards_[target];
  Enqueue(target, envelope);
}

void Shard::FinishGather(Gather* gather) {
  Connection* conn = gather->conn;
  for (Envelope* envelope : gather->envelopes) gather->parts[envelope->target] = &envelope->result;
  // A SCAN step that exhausted its shard without finding anything moves straight on to the
  // next shard, so a client never sees an empty page with a non-zero cursor for an empty shard
  // (and an empty keyspace ends in one call, as in Redis).
  if (gather->routing == commands::Routing::kCursorShard && !conn->closed) {
    commands::PartResult* part = gather->parts[gather->cursor_shard];
    if (!part->failed && part->cursor == 0 && part->integer == 0 &&
        gather->cursor_shard + 1 < options_.count) {
      gather->parts[gather->cursor_shard] = nullptr;
      ++gather->cursor_shard;
      gather->outstanding = 1;
      SendPart(gather, gather->cursor_shard, gather->args, true, 0);
      if (gather->outstanding == 0) FinishGather(gather);
      return;
    }
  }
  if (!conn->closed) {
    proto::ReplyWriter writer(&gather->slot->bytes, gather->resp_version);
    commands::CombineInput input{gather->parts, gather->key_part, gather->key_pos, gather->args};
    input.shard_count = options_.count;
    if (gather->routing == commands::Routing::kCursorShard) {
      input.parts = std::span(gather->parts).subspan(gather->cursor_shard, 1);
      input.shard = gather->cursor_shard;
    }
    if (gather->spec->combine != nullptr) {
      gather->spec->combine(input, writer);
    } else {
      // A part-routed command without a combiner answers with its parts' replies as they are.
      for (commands::PartResult* part : gather->parts) {
        if (part != nullptr) writer.Raw(part->resp);
      }
    }
    gather->slot->ready = true;
    --conn->inflight;
    if (conn->binary != nullptr) {
      BinaryComplete(conn, gather->slot);
    } else {
      FlushSlots(conn);
    }
  } else {
    --conn->inflight;
    Recycle(gather->slot);
  }
  for (Envelope* envelope : gather->envelopes) Recycle(envelope);
  gather->envelopes.clear();
  Recycle(gather);
}

void Shard::OnEnvelope(Envelope* envelope) {
  if (envelope->origin == options_.index) {  // back from its target
    if (envelope->gather == nullptr) return DeliverBatch(envelope);
    Gather* gather = envelope->gather;
    if (--gather->outstanding == 0) FinishGather(gather);
    return;
  }
  if (envelope->gather == nullptr) {
    RunBatch(envelope);
  } else {
    UnpackArgs(envelope->arg_bytes, envelope->arg_ends, &envelope->args);
    RunPart(envelope->spec, envelope->args, envelope->resp_version, &envelope->result,
            envelope->as_part, envelope->caller_id, envelope->cursor_position, 0);
    envelope->wake_origin = true;
  }
  outbound_[envelope->origin].push_back(envelope);
}

void Shard::RunBatch(Envelope* batch) {
  // Cleared here, not by the origin when it pools the envelope, and only if they hold something
  // (Envelope: a line written on one side only crosses one way).
  if (!batch->replies.empty()) batch->replies.clear();
  if (!batch->reply_ends.empty()) batch->reply_ends.clear();
  if (!batch->unsent.empty()) batch->unsent.clear();
  handover_out_.clear();
  handover_sends_.clear();
  // The replies of a handed-over connection are written straight into its output (handover_out_),
  // each between the origin's own replies around it (`local`), so SendHandovers sends them as
  // they are instead of copying every reply once more to put them in order.
  const std::vector<Envelope::Handover>& handovers = batch->handovers;
  const uint32_t* local_ends = batch->local_ends.data();
  size_t next_handover = 0;  // the first handover not yet written
  uint32_t segment = 0;      // the local segment to write after the next reply of it
  size_t output_begin = 0;
  auto append_local = [&](uint32_t index) {
    const uint32_t begin = index == 0 ? 0 : local_ends[index - 1];
    // Empty between two forwarded requests in a row: half the time, with keys spread evenly.
    if (local_ends[index] > begin) {
      handover_out_.append(batch->local.data() + begin, local_ends[index] - begin);
    }
  };
  size_t requests = 0;
  const std::string_view bytes = batch->requests.readable();
  PrefetchShared(bytes.data(), bytes.size());
  size_t position = 0;
  // As for a connection's pipeline (ProcessInput): kRequestBatch requests at a time have their
  // keys' table groups, then records, fetched before any executes, so the cache misses overlap.
  while (position < bytes.size()) {
    batch_args_.clear();
    size_t count = 0;
    size_t keys = 0;
    while (count < static_cast<size_t>(kRequestBatch) && position < bytes.size()) {
      ForwardHeader header;
      std::memcpy(&header, bytes.data() + position, sizeof(header));
      position += sizeof(header);
      const char* lengths = bytes.data() + position;
      position += header.arg_count * sizeof(uint32_t);
      const auto first_arg = static_cast<uint32_t>(batch_args_.size());
      for (uint32_t i = 0; i < header.arg_count; ++i) {
        uint32_t length;
        std::memcpy(&length, lengths + i * sizeof(length), sizeof(length));
        const std::string_view arg(bytes.data() + position, length);
        batch_args_.push_back(arg);
        // From the registers, not reloaded from batch_args_: a 16-byte load of what was just
        // stored as two 8-byte halves stalls until the stores retire (perf: a quarter of
        // RunBatch's time).
        if (i == 1) batch_keys_[keys++] = arg;
        position += length;
      }
      batch_[count] = {first_arg, header.arg_count, 0, commands::kNoSlot};
      forwarded_[count] = {header.spec, header.caller_id, header.key_slot,
                           static_cast<int>(header.resp_version)};
      ++count;
    }
    store_.PrefetchKeys(std::span(batch_keys_.data(), keys));
    for (size_t i = 0; i < count; ++i) {
      const ForwardedRequest& request = forwarded_[i];
      const size_t index = requests + i;
      const bool handed_over =
          next_handover < handovers.size() && index >= handovers[next_handover].first_request;
      if (handed_over && index == handovers[next_handover].first_request) {
        output_begin = handover_out_.size();
        segment = handovers[next_handover].first_segment;
        append_local(segment++);
      }
      proto::ReplyWriter writer(handed_over ? &handover_out_ : &batch->replies,
                                request.resp_version);
      commands::CommandContext ctx{
          .store = store_,
          .now_ms = now_ms_,
          .wall_drift_ms = clock_.wall_drift_ms(),
          .args = std::span<const std::string_view>(batch_args_.data() + batch_[i].first_arg,
                                                    batch_[i].arg_count),
          .reply = writer,
          .limits = options_.command_limits,
          .services = this,
          .shard_index = options_.index,
          .shard_count = options_.count,
          .caller_id = request.caller_id,
          .slot = request.key_slot,
          .slots = &slot_table_,
          .view = view_,
          .slot_of = &group_->slot_function()};
      Execute(request.spec, ctx);
      batch->reply_ends.push_back(batch->replies.size());
      if (handed_over) {
        append_local(segment++);
        const Envelope::Handover& handover = handovers[next_handover];
        if (index + 1 == handover.first_request + handover.request_count) {
          handover_sends_.push_back({static_cast<uint32_t>(next_handover), output_begin,
                                     handover_out_.size() - output_begin});
          ++next_handover;
        }
      }
    }
    store_.ForgetKeyHashes();
    requests += count;
  }
  // Replies the origin passes on wake it; those of connections handed over are written here.
  size_t handed = 0;
  for (const Envelope::Handover& handover : batch->handovers) handed += handover.request_count;
  batch->wake_origin = requests > handed;
  SendHandovers(batch);
}

void Shard::DeliverBatch(Envelope* batch) {
  // The replies of handed-over connections were written to their sockets by the target and are
  // not read here: a batch that was all handed over leaves its reply lines on the target, which
  // writes them again for the next batch, instead of having them pulled over and taken back.
  if (batch->wake_origin) {
    PrefetchShared(batch->reply_ends.data(), batch->reply_ends.size() * sizeof(size_t));
    PrefetchShared(batch->replies.data(), batch->replies.size());
  }
  size_t next_handover = 0;
  for (size_t i = 0; i < batch->waiting.size(); ++i) {
    if (next_handover < batch->handovers.size() &&
        i == batch->handovers[next_handover].first_request) {
      const Envelope::Handover& handover = batch->handovers[next_handover++];
      SettleHandover(batch, handover);
      i += handover.request_count - 1;
      continue;
    }
    const auto [conn, slot] = batch->waiting[i];
    const size_t start = i == 0 ? 0 : batch->reply_ends[i - 1];
    const std::string_view reply(batch->replies.data() + start, batch->reply_ends[i] - start);
    --conn->inflight;
    if (conn->closed) {
      Recycle(slot);
    } else if (conn->binary != nullptr) {
      slot->bytes.assign(reply);
      BinaryComplete(conn, slot);
    } else if (conn->pending.front() != slot) {
      // An earlier reply is still owed: this one waits behind it.
      slot->bytes.assign(reply);
      slot->ready = true;
    } else {
      const bool was_paused = InputPaused(conn);
      conn->pending.pop_front();
      MoveHeld(conn, slot->held_offset);
      Recycle(slot);
      conn->out.append(reply);
      FlushReadySlots(conn, was_paused);
    }
  }
  Recycle(batch);
}

void Shard::SettleHandover(Envelope* batch, const Envelope::Handover& handover) {
  // The run's replies were written by the target with the rest of the connection's output; what
  // it could not send is all that is left of them. Its slots lead the connection's order (they
  // were all it owed when it was handed over), so they leave it together.
  Connection* conn = batch->waiting[handover.first_request].conn;
  conn->inflight -= handover.request_count;
  DirectDone(conn);
  const bool was_paused = InputPaused(conn);
  for (uint32_t i = 0; i < handover.request_count; ++i) {
    PendingReply* slot = batch->waiting[handover.first_request + i].slot;
    if (!conn->closed) conn->pending.pop_front();
    Recycle(slot);
  }
  if (conn->closed) return;
  conn->out.append(batch->unsent, handover.unsent_begin,
                   handover.unsent_end - handover.unsent_begin);
  FlushReadySlots(conn, was_paused);
}

void Shard::DrainInbound() {
  for (int from = 0; from < options_.count; ++from) {
    if (from == options_.index) continue;
    SpscRing<Envelope>& ring = group_->ring(from, options_.index);
    while (Envelope* envelope = ring.Pop()) OnEnvelope(envelope);
  }
}

void Shard::Enqueue(int target, Envelope* envelope) {
  SealBatch(target);
  outbound_[target].push_back(envelope);
}

void Shard::SealBatch(int target) {
  if (open_batches_[target] == nullptr) return;
  HandOver(open_batches_[target]);
  outbound_[target].push_back(open_batches_[target]);
  open_batches_[target] = nullptr;
}

void Shard::FlushOutbound() {
  for (int target = 0; target < options_.count; ++target) {
    SealBatch(target);
    std::vector<Envelope*>& queue = outbound_[target];
    if (queue.empty()) continue;
    SpscRing<Envelope>& ring = group_->ring(options_.index, target);
    size_t pushed = 0;
    bool wake = false;
    while (pushed < queue.size()) {
      // Read before the push: from then on the envelope is the other shard's.
      const Envelope* envelope = queue[pushed];
      const bool outgoing = envelope->origin == options_.index;
      const size_t requests = outgoing ? envelope->request_count() : 0;
      const bool wanted = outgoing || envelope->wake_origin;
      if (!ring.Push(queue[pushed])) break;
      unsent_forwards_[target] -= requests;
      wake = wake || wanted;
      ++pushed;
    }
    if (pushed > 0) {
      queue.erase(queue.begin(), queue.begin() + pushed);
      // Pairs with the parked flag store in Turn: either we see it set (in WakeOwed, which reads
      // it after this fence), or the target sees our push before it sleeps. Likewise with
      // AwaitDirect's increment: either we see the waiter, or the target sees the push when it
      // looks at its rings before parking.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      Shard& other = group_->shard(target);
      if (wake || other.direct_waiters_.load(std::memory_order_seq_cst) > 0) {
        wake_owed_[target] = 1;  // WakeOwed, after the turn's writes
      }
    }
  }
}

// A connection whose owed replies are all in one batch, and whose own replies wait for them, needs
// nothing more from this shard until the batch has run: the target writes its whole output (this
// shard's replies interleaved with the batch's, in request order) to the socket itself. The
// replies then make no return hop, this shard is not woken to pass them on and takes no turn to
// send them (at pipeline 16 over 2 shards this halved the turns and cut context switches by
// four), and the batch still comes back, without a wake-up, to settle the connection's accounts.
// Until then nothing else writes to the socket: what the connection produces meanwhile waits in
// `held` behind the handed-over slots, and whoever produced it is woken when the batch is back
// (AwaitDirect); a connection closed meanwhile keeps its descriptor until then (Close).
void Shard::HandOver(Envelope* batch) {
  const std::vector<Forwarded>& waiting = batch->waiting;
  size_t run_end = 0;
  for (size_t first = 0; first < waiting.size(); first = run_end) {
    Connection* conn = waiting[first].conn;
    run_end = first + 1;
    while (run_end < waiting.size() && waiting[run_end].conn == conn) ++run_end;
    const size_t count = run_end - first;
    // Every reply the connection is owed is in this run of the batch (each request of it in the
    // batch is owed until delivered, so a connection with another run owes more than this one
    // holds), its output waits for them alone, and nothing else may write to its socket meanwhile.
    if (conn->pending.size() != count || conn->closed || conn->binary != nullptr ||
        conn->close_after_flush || conn->direct_in_flight || conn->client.Subscribed() ||
        conn->unsent() + conn->held_bytes() > kDeferredOutputBytes) {
      continue;
    }
    batch->handovers.push_back({.fd = conn->fd,
                                .first_request = static_cast<uint32_t>(first),
                                .request_count = static_cast<uint32_t>(count),
                                .first_segment = static_cast<uint32_t>(batch->local_ends.size())});
    std::string& local = batch->local;
    local.append(conn->out, conn->out_sent);
    size_t from = conn->held_moved;
    for (size_t i = first; i < run_end; ++i) {
      PendingReply* slot = waiting[i].slot;
      if (slot->held_offset > from)
        local.append(conn->held.data() + from, slot->held_offset - from);
      batch->local_ends.push_back(static_cast<uint32_t>(local.size()));
      from = slot->held_offset;
      slot->held_offset = 0;
      slot->direct = true;
    }
    local.append(conn->held, from);
    batch->local_ends.push_back(static_cast<uint32_t>(local.size()));
    conn->out.clear();
    conn->out_sent = 0;
    conn->held.clear();
    conn->held_moved = 0;
    conn->direct_in_flight = true;
  }
}

void Shard::SendHandovers(Envelope* batch) {
  if (handover_sends_.empty()) return;
  // DrainInbound runs between a turn's reads and its writes: sockets_ holds nothing queued here.
  size_t next = 0;
  while (next < handover_sends_.size()) {
    const size_t batch_start = next;
    for (; next < handover_sends_.size() && !sockets_.full(); ++next) {
      const HandoverSend& send = handover_sends_[next];
      sockets_.Send(batch->handovers[send.handover].fd, handover_out_.data() + send.begin,
                    send.length);
    }
    std::span<const ssize_t> results = sockets_.Run();
    for (size_t i = batch_start; i < next; ++i) {
      const HandoverSend& send = handover_sends_[i];
      Envelope::Handover& handover = batch->handovers[send.handover];
      const ssize_t sent = std::max<ssize_t>(results[i - batch_start], 0);
      stats_.net_output_bytes += sent;
      if (sent == static_cast<ssize_t>(send.length)) {
        stats_.cross_shard_direct_replies += handover.request_count;
        continue;
      }
      // A full socket buffer or a broken connection: the origin sends the rest, or finds out.
      handover.unsent_begin = batch->unsent.size();
      batch->unsent.append(handover_out_, send.begin + sent, send.length - sent);
      handover.unsent_end = batch->unsent.size();
      batch->wake_origin = true;
    }
  }
  if (handover_out_.capacity() > kKeepEnvelopeCapacity) std::string().swap(handover_out_);
}

void Shard::WakeOwed() {
  for (int target = 0; target < options_.count; ++target) {
    if (wake_owed_[target] == 0) continue;
    wake_owed_[target] = 0;
    group_->shard(target).Wake();
  }
}

bool Shard::HasOutbound() const {
  for (int target = 0; target < options_.count; ++target) {
    if (!outbound_[target].empty() || open_batches_[target] != nullptr) return true;
  }
  return false;
}

void Shard::FlushSlots(Connection* conn) { FlushReadySlots(conn, InputPaused(conn)); }

void Shard::FlushReadySlots(Connection* conn, bool was_paused) {
  while (!conn->pending.empty() && conn->pending.front()->ready) {
    PendingReply* slot = conn->pending.front();
    conn->pending.pop_front();
    MoveHeld(conn, slot->held_offset);
    conn->out.append(slot->bytes);
    Recycle(slot);
  }
  if (conn->pending.empty() && !conn->held.empty()) {
    MoveHeld(conn, conn->held.size());
    conn->held.clear();
    conn->held_moved = 0;
    if (conn->held.capacity() > kKeepOutputCapacity) std::string().swap(conn->held);
  }
  MarkWrite(conn);
  if (was_paused && !InputPaused(conn) && !conn->in_resume_list) {
    conn->in_resume_list = true;
    resume_list_.push_back(conn);
  }
}

void Shard::AwaitDirect(Connection* conn) {
  if (conn->awaits_direct) return;
  conn->awaits_direct = true;
  direct_waiters_.fetch_add(1, std::memory_order_seq_cst);
}

void Shard::DirectDone(Connection* conn) {
  conn->direct_in_flight = false;
  if (conn->awaits_direct) {
    conn->awaits_direct = false;
    direct_waiters_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (conn->lingering_fd >= 0) {
    close(conn->lingering_fd);
    conn->lingering_fd = -1;
  }
}

void Shard::MarkWrite(Connection* conn) {
  if (!conn->in_write_list) {
    conn->in_write_list = true;
    write_list_.push_back(conn);
  }
}

void Shard::WriteAll() {
  // Write may close connections, which only marks them; the list holds no dangling pointers
  // because closed connections are freed only when nothing points at them (zombies_). The sends
  // of a batch of connections go out together (SocketBatch); what the bookkeeping after them
  // adds to the list goes in the next batch.
  size_t next = 0;
  while (next < write_list_.size()) {
    writes_.clear();
    for (; next < write_list_.size() && !sockets_.full(); ++next) {
      Connection* conn = write_list_[next];
      conn->in_write_list = false;
      if (conn->closed) continue;
      // A pipeline whose next reply is still on another shard: its arrival (next turn) marks the
      // connection again, and one send then carries the whole batch instead of the ready prefix
      // now and the rest then — half the sends, and the client's reads, for a pipeline that hops.
      if (!conn->pending.empty() && !conn->pending.front()->ready &&
          conn->unsent() < kDeferredOutputBytes) {
        continue;
      }
      const size_t unsent = conn->unsent();
      if (unsent > 0) sockets_.Send(conn->fd, conn->out.data() + conn->out_sent, unsent);
      writes_.push_back({conn, unsent > 0});
    }
    std::span<const ssize_t> results = sockets_.Run();
    size_t result = 0;
    for (const auto& [conn, sent] : writes_) {
      const ssize_t n = sent ? results[result++] : 0;
      if (!conn->closed) Write(conn, n);
    }
  }
  writes_.clear();
  write_list_.clear();
}

void Shard::Write(Connection* conn, ssize_t n) {
  bool was_paused = InputPaused(conn);
  if (n != 0) {
    if (n < 0) {
      if (n != -EAGAIN && n != -EINTR) {
        Close(conn, nullptr);
        return;
      }
      n = 0;
    }
    stats_.net_output_bytes += n;
    conn->out_sent += n;
    if (conn->out_sent == conn->out.size()) {
      conn->out.clear();
      conn->out_sent = 0;
      if (conn->out.capacity() > kKeepOutputCapacity) std::string().swap(conn->out);
    } else if (conn->out_sent > conn->out.size() / 2 && conn->out_sent > 64 * 1024) {
      conn->out.erase(0, conn->out_sent);
      conn->out_sent = 0;
    }
  }
  AccountBuffers(conn);
  size_t pending_bytes = conn->unsent() + conn->held_bytes();
  if (pending_bytes > static_cast<size_t>(options_.client_output_buffer_limit)) {
    Close(conn, "output buffer limit reached");
    return;
  }
  if (conn->close_after_flush && conn->unsent() == 0 && conn->pending.empty()) {
    Close(conn, nullptr);
    return;
  }
  UpdateInterest(conn);
  if (was_paused && !InputPaused(conn) && !conn->in_resume_list) {
    conn->in_resume_list = true;
    resume_list_.push_back(conn);
  }
}

bool Shard::InputPaused(const Connection* conn) const {
  return conn->pending.size() >= kMaxPendingReplies ||
         conn->unsent() + conn->held_bytes() >= kOutputPauseBytes || stopping_;
}

void Shard::UpdateInterest(Connection* conn) {
  if (conn->closed) return;
  uint32_t wanted = 0;
  if (!conn->close_after_flush && !InputPaused(conn)) wanted |= EPOLLIN;
  if (conn->unsent() > 0) wanted |= EPOLLOUT;
  if (wanted == conn->epoll_events) return;
  epoll_event event{};
  event.events = wanted;
  event.data.ptr = conn;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, conn->fd, &event);
  conn->epoll_events = wanted;
}

void Shard::Close(Connection* conn, const char* reason) {
  if (conn->closed) return;
  if (reason != nullptr) {
    fprintf(stderr, "keep-server: closing client id=%llu addr=%s: %s\n",
            static_cast<unsigned long long>(conn->client.id), conn->client.addr.c_str(), reason);
  }
  // Its input buffer may go while a batch parsed from it is still executing.
  store_.ForgetKeyHashes();
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, conn->fd, nullptr);
  if (conn->direct_in_flight) {
    shutdown(conn->fd, SHUT_RDWR);
    conn->lingering_fd = conn->fd;
  } else {
    close(conn->fd);
  }
  conn->fd = -1;
  conn->closed = true;
  connection_bytes_ -= conn->accounted_bytes;
  conn->accounted_bytes = 0;
  store_.SetExternalBytes(BufferBytes());
  group_->ReleaseClient();
  --stats_.connected_clients;
  // Slots still referenced by in-flight requests are recycled when their replies arrive.
  conn->pending.ForEach([this](PendingReply* slot) {
    if (slot->ready) Recycle(slot);
  });
  conn->pending.clear();
  std::string().swap(conn->held);
  conn->held_moved = 0;
  for (int kind = 0; kind < 3; ++kind) {
    for (const std::string& name : conn->client.subscriptions[kind]) {
      Unsubscribe(conn->client, static_cast<commands::PubSubKind>(kind), name);
    }
  }
  if (conn->binary != nullptr) BinaryClosed(conn);
  std::erase(resume_list_, conn);
  conn->in_resume_list = false;
  auto it = connections_.find(conn->client.id);
  if (it != connections_.end()) {
    std::unique_ptr<Connection> owned = std::move(it->second);
    connections_.erase(it);
    // Lists built this turn may still hold the pointer; free it on a later turn.
    zombies_.push_back(std::move(owned));
  }
}

void Shard::Timers(uint64_t background_deadline) {
  PublishMetrics();
  clock_.TrackWallDrift();
  // The pooled envelopes give back buffers larger than this tick's traffic needed, as an idle
  // connection's buffers shrink, so memory returns to its level before a burst.
  const size_t keep = std::max(kIdleEnvelopeCapacity, 2 * batch_bytes_this_tick_);
  for (Envelope* envelope : envelope_pool_) ShrinkBuffers(envelope, keep);
  batch_bytes_this_tick_ = 0;
  // What the turn's own background work left of its time (all of it in an idle shard's tick).
  size_t examined = 0;
  if (store_.KeysWithExpiry() > 0) ExpireFor(kExpireBudgetPerTick, background_deadline, &examined);
  // An idle shard still compacts (a busy one does it every turn).
  DefragFor(kDefragBudgetPerTick, background_deadline);
  // As Redis resizes an idle client's query buffer: a connection quiet for kIdleBuffersMs gives
  // back what a burst grew its buffers to (up to 256 KiB in, 1 MiB out each otherwise).
  for (auto& [id, conn] : connections_) {
    if (conn->closed || now_ms_ - conn->client.last_interaction_ms < kIdleBuffersMs ||
        conn->accounted_bytes <= kIdleBuffersKept) {
      continue;
    }
    conn->in.ShrinkIfEmpty(0);
    if (conn->unsent() == 0 && conn->pending.empty()) {
      std::string().swap(conn->out);
      conn->out_sent = 0;
      std::string().swap(conn->held);
    }
    AccountBuffers(conn.get());
  }
  int64_t timeout = group_->timeout_seconds();
  if (timeout > 0) {
    std::vector<Connection*> idle;
    for (auto& [id, conn] : connections_) {
      // As in Redis, subscribers are exempt: waiting quietly for messages is what they do.
      if (!conn->closed && conn->pending.empty() && !conn->client.Subscribed() &&
          (conn->binary == nullptr || conn->binary->subscriptions.empty()) &&
          now_ms_ - conn->client.last_interaction_ms > timeout * 1000) {
        idle.push_back(conn.get());
      }
    }
    for (Connection* conn : idle) Close(conn, nullptr);
  }
}

size_t Shard::ExpireFor(size_t budget, uint64_t deadline, size_t* examined) {
  size_t erased = 0;
  *examined = 0;
  while (*examined < budget && telemetry::CycleClock::Now() < deadline) {
    const size_t slice = std::min(kExpireSlice, budget - *examined);
    erased += store_.ExpireSome(slice);
    *examined += slice;
  }
  return erased;
}

void Shard::DefragFor(size_t budget, uint64_t deadline) {
  for (size_t moved = 0; moved < budget && telemetry::CycleClock::Now() < deadline;
       moved += kDefragSlice) {
    defragmenting_ = store_.DefragSome(std::min(kDefragSlice, budget - moved));
    if (!defragmenting_) return;
  }
}

void Shard::PublishMetrics() {
  using telemetry::ShardValue;
  commands::ShardStats stats;
  CollectStats(&stats);
  metrics_.Publish(ShardValue::kKeys, stats.keys);
  metrics_.Publish(ShardValue::kKeysWithExpiry, stats.keys_with_expiry);
  metrics_.Publish(ShardValue::kUsedBytes, stats.used_bytes);
  metrics_.Publish(ShardValue::kDatasetBytes, stats.dataset_bytes);
  metrics_.Publish(ShardValue::kExpiryLagMs, stats.expiry_lag_ms);
  metrics_.Publish(ShardValue::kExpiredKeys, stats.expired_keys);
  metrics_.Publish(ShardValue::kConnectedClients, stats.connected_clients);
  metrics_.Publish(ShardValue::kConnectionsReceived, stats.total_connections_received);
  metrics_.Publish(ShardValue::kRejectedConnections, stats.rejected_connections);
  metrics_.Publish(ShardValue::kCommandsProcessed, stats.total_commands_processed);
  metrics_.Publish(ShardValue::kNetInputBytes, stats.net_input_bytes);
  metrics_.Publish(ShardValue::kNetOutputBytes, stats.net_output_bytes);
  metrics_.Publish(ShardValue::kCrossShardRequests, stats.cross_shard_requests);
  metrics_.Publish(ShardValue::kCrossShardDirectReplies, stats.cross_shard_direct_replies);
  metrics_.Publish(ShardValue::kSocketSystemCalls, stats.socket_system_calls);
  metrics_.Publish(ShardValue::kKeyspaceHits, stats.keyspace_hits);
  metrics_.Publish(ShardValue::kKeyspaceMisses, stats.keyspace_misses);
  metrics_.Publish(ShardValue::kClientOutputBufferBytes, stats.client_output_buffer_bytes);
  metrics_.Publish(ShardValue::kClientQueryBufferBytes, stats.client_query_buffer_bytes);
  metrics_.Publish(ShardValue::kEvictedKeys, stats.evicted_keys);
  metrics_.Publish(ShardValue::kFragmentedBytes, stats.allocator_frag_bytes);
  metrics_.Publish(ShardValue::kDefragMoves, stats.active_defrag_hits);
  metrics_.Publish(ShardValue::kMaxBytes, stats.maxmemory);
  size_t classes = std::min(
      {options_.key_classes.size(), metrics_.key_class_count(), commands::kMaxReportedClasses});
  for (size_t c = 0; c < classes; ++c) {
    telemetry::KeyClassMetrics& m = metrics_.key_class(c);
    m.keys.Set(stats.class_keys[c]);
    m.bytes.Set(stats.class_bytes[c]);
    m.evicted.Set(stats.class_evicted[c]);
    m.expired.Set(stats.class_expired[c]);
  }
}

void Shard::AccountBuffers(Connection* conn) {
  const size_t bytes = conn->in.capacity() + conn->out.capacity() + conn->held.capacity();
  if (bytes == conn->accounted_bytes) return;
  connection_bytes_ += bytes - conn->accounted_bytes;
  conn->accounted_bytes = bytes;
  store_.SetExternalBytes(BufferBytes());
}

// The memory cap (design §2.5): what writes left over the cap is evicted a bounded step per turn.
void Shard::EnforceMemoryCap() {
  evicting_ = store_.OverLimit() && store_.EvictSome(kEvictBudgetPerTurn) > 0 && store_.OverLimit();
}

void Shard::BeginStop() {
  stopping_ = true;
  stop_deadline_ms_ = now_ms_ + kStopFlushMs;
  for (int& fd : options_.listen_fds) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    fd = -1;
  }
  for (auto& [id, conn] : connections_) UpdateInterest(conn.get());
}

bool Shard::Drained() const {
  for (const auto& [id, conn] : connections_) {
    if (!conn->closed && (!conn->pending.empty() || conn->inflight > 0 || conn->unsent() > 0)) {
      return false;
    }
  }
  return !HasOutbound() && zombies_.empty();
}

Envelope* Shard::NewEnvelope() {
  if (envelope_pool_.empty()) return new Envelope();
  Envelope* envelope = envelope_pool_.back();
  envelope_pool_.pop_back();
  return envelope;
}

void Shard::Recycle(Envelope* envelope) {
  batch_bytes_this_tick_ = std::max(
      {batch_bytes_this_tick_, envelope->requests.size(), envelope->replies.size(),
       envelope->local.size(), envelope->unsent.size(),
       envelope->waiting.size() * sizeof(Forwarded), envelope->reply_ends.size() * sizeof(size_t),
       envelope->local_ends.size() * sizeof(uint32_t),
       envelope->handovers.size() * sizeof(Envelope::Handover)});
  // What the target writes (replies, reply_ends, unsent, wake_origin, a part's result) it resets
  // itself before use: writing it here would send its lines back and forth (Envelope).
  envelope->gather = nullptr;
  envelope->requests.Clear();
  envelope->waiting.clear();
  envelope->handovers.clear();
  envelope->local.clear();
  envelope->local_ends.clear();
  ShrinkBuffers(envelope, kKeepEnvelopeCapacity);
  envelope_pool_.push_back(envelope);
}

void Shard::ShrinkBuffers(Envelope* envelope, size_t keep_capacity) {
  envelope->requests.ShrinkIfEmpty(keep_capacity);
  for (std::string* buffer : {&envelope->replies, &envelope->local, &envelope->unsent,
                              &envelope->arg_bytes, &envelope->result.resp}) {
    if (buffer->capacity() > keep_capacity) std::string().swap(*buffer);
  }
  if (envelope->waiting.capacity() * sizeof(Forwarded) > keep_capacity) {
    std::vector<Forwarded>().swap(envelope->waiting);
  }
  if (envelope->reply_ends.capacity() * sizeof(size_t) > keep_capacity) {
    std::vector<size_t>().swap(envelope->reply_ends);
  }
  if (envelope->local_ends.capacity() * sizeof(uint32_t) > keep_capacity) {
    std::vector<uint32_t>().swap(envelope->local_ends);
  }
  if (envelope->handovers.capacity() * sizeof(Envelope::Handover) > keep_capacity) {
    std::vector<Envelope::Handover>().swap(envelope->handovers);
  }
  // The pool's batch buffers count against the memory cap as connections' buffers do.
  const size_t bytes = envelope->requests.capacity() + envelope->replies.capacity() +
                       envelope->local.capacity() + envelope->unsent.capacity() +
                       envelope->reply_ends.capacity() * sizeof(size_t) +
                       envelope->local_ends.capacity() * sizeof(uint32_t) +
                       envelope->handovers.capacity() * sizeof(Envelope::Handover) +
                       envelope->waiting.capacity() * sizeof(Forwarded);
  if (bytes != envelope->accounted_bytes) {
    envelope_bytes_ += bytes - envelope->accounted_bytes;
    envelope->accounted_bytes = bytes;
    store_.SetExternalBytes(BufferBytes());
  }
}

PendingReply* Shard::NewSlot() {
  if (slot_pool_.empty()) return new PendingReply();
  PendingReply* slot = slot_pool_.back();
  slot_pool_.pop_back();
  return slot;
}

void Shard::Recycle(PendingReply* slot) {
  slot->ready = false;
  slot->direct = false;
  slot->bytes.clear();
  if (slot->bytes.capacity() > 64 * 1024) std::string().swap(slot->bytes);
  slot_pool_.push_back(slot);
}

Gather* Shard::NewGather() {
  if (gather_pool_.empty()) return new Gather();
  Gather* gather = gather_pool_.back();
  gather_pool_.pop_back();
  return gather;
}

void Shard::Recycle(Gather* gather) {
  gather->conn = nullptr;
  gather->slot = nullptr;
  gather->outstanding = 0;
  gather->envelopes.clear();
  gather->key_part.clear();
  gather->key_pos.clear();
  gather_pool_.push_back(gather);
}

// --- commands::ShardServices ---

void Shard::CollectStats(commands::ShardStats* stats) {
  *stats = stats_;
  stats->keys = store_.Size();
  stats->keys_with_expiry = store_.KeysWithExpiry();
  stats->expired_keys = store_.expired_keys();
  stats->used_bytes = store_.AllocatedBytes() + BufferBytes();
  stats->reserved_bytes = store_.UsedBytes();
  stats->maxmemory = static_cast<uint64_t>(group_->maxmemory());
  stats->evicted_keys = store_.evicted_keys();
  stats->allocator_frag_bytes = store_.FragmentedBytes();
  stats->active_defrag_running = store_.defragging() ? 1 : 0;
  stats->active_defrag_hits = store_.defrag_hits();
  stats->active_defrag_misses = store_.defrag_misses();
  const core::KeyClassTable& classes = store_.key_classes();
  for (size_t c = 0; c < classes.size() && c < commands::kMaxReportedClasses; ++c) {
    const core::Store::ClassStats& class_stats = store_.class_stats(c);
    stats->class_keys[c] = class_stats.keys;
    stats->class_bytes[c] = class_stats.bytes;
    stats->class_evicted[c] = class_stats.evicted;
    stats->class_expired[c] = class_stats.expired;
  }
  stats->dataset_bytes = store_.LogicalBytes();
  stats->io_uring_shards = sockets_.io_uring() ? 1 : 0;
  stats->socket_system_calls = sockets_.system_calls();
  stats->expiry_lag_ms = static_cast<uint64_t>(std::max<int64_t>(0, store_.ExpiryLagMs()));
  uint64_t output = 0;
  uint64_t input = 0;
  for (const auto& [id, conn] : connections_) {
    output += conn->out.capacity() + conn->held.capacity();
    input += conn->in.capacity();
  }
  stats->client_output_buffer_bytes = output;
  stats->client_query_buffer_bytes = input;
}

void Shard::AppendClientList(std::string* out, const std::vector<uint64_t>& ids) {
  for (const auto& [id, conn] : connections_) {
    if (conn->closed) continue;
    if (!ids.empty() && std::find(ids.begin(), ids.end(), id) == ids.end()) continue;
    const commands::ClientState& c = conn->client;
    const std::string_view command = c.last_command.empty() ? "NULL" : c.last_command;
    char line[512];
    snprintf(
        line, sizeof(line),
        "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=N db=%d sub=0 "
        "psub=0 ssub=0 multi=-1 qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=0 rbs=%zu "
        "rbp=0 obl=0 oll=%zu omem=%zu tot-mem=%zu events=r cmd=%.*s user=default redir=-1 "
        "resp=%d shard=%d\n",
        static_cast<unsigned long long>(c.id), c.addr.c_str(), c.laddr.c_str(), c.fd,
        c.name.c_str(), static_cast<long long>((now_ms_ - c.created_ms) / 1000),
        static_cast<long long>((now_ms_ - c.last_interaction_ms) / 1000), c.db, conn->in.size(),
        conn->in.capacity() - conn->in.size(), conn->in.capacity(), conn->pending.size(),
        conn->out.capacity() + conn->held.capacity(),
        conn->in.capacity() + conn->out.capacity() + conn->held.capacity() + sizeof(Connection),
        static_cast<int>(command.size()), command.data(), c.resp_version, c.shard);
    out->append(line);
  }
}

int Shard::KillClients(const commands::ClientKillFilter& filter) {
  int killed = 0;
  for (auto& [id, conn] : connections_) {
    if (conn->closed) continue;
    const commands::ClientState& c = conn->client;
    if (filter.skip_me && c.id == filter.caller_id) continue;
    if (filter.has_id && c.id != filter.id) continue;
    if (!filter.addr.empty() && c.addr != filter.addr) continue;
    if (!filter.laddr.empty() && c.laddr != filter.laddr) continue;
    // The caller's own connection closes after its reply; others at once (their owed replies
    // are dropped, as Redis drops them).
    if (c.id == filter.caller_id) {
      conn->close_after_flush = true;
    } else {
      conn->close_after_flush = true;
      conn->out.clear();
      conn->out_sent = 0;
      MarkWrite(conn.get());
    }
    ++killed;
  }
  return killed;
}

void Shard::RequestShutdown() {
  if (group_->on_shutdown_request) group_->on_shutdown_request();
}

const commands::ServerFacts& Shard::facts() { return group_->facts(); }

void Shard::ConfigGet(std::string_view pattern,
                      std::vector<std::pair<std::string, std::string>>* out) {
  group_->ConfigGet(pattern, out);
}

std::string Shard::ConfigSet(std::string_view name, std::string_view value) {
  return group_->ConfigSet(name, value);
}

void Shard::ResetStats() {
  uint64_t connected = stats_.connected_clients;
  stats_ = commands::ShardStats{};
  stats_.connected_clients = connected;
}

}  // namespace keep::shard

namespace keep::shard {

bool Shard::OwnsKey(std::string_view key) {
  return options_.count == 1 ||
         commands::ShardOfSlot(group_->slot_function()(key), options_.count) == options_.index;
}

}  // namespace keep::shard

namespace keep::shard {

void Shard::Subscribe(const commands::ClientState& client, commands::PubSubKind kind,
                      std::string_view name) {
  auto it = connections_.find(client.id);
  if (it == connections_.end()) return;
  auto& map = subscribers_[static_cast<int>(kind)];
  auto entry = map.find(name);
  if (entry == map.end()) entry = map.emplace(std::string(name), std::vector<Connection*>{}).first;
  entry->second.push_back(it->second.get());
}

void Shard::Unsubscribe(const commands::ClientState& client, commands::PubSubKind kind,
                        std::string_view name) {
  auto& map = subscribers_[static_cast<int>(kind)];
  auto entry = map.find(name);
  if (entry == map.end()) return;
  std::erase_if(entry->second, [&](Connection* c) { return c->client.id == client.id; });
  if (entry->second.empty()) map.erase(entry);
}

int64_t Shard::Publish(commands::PubSubKind kind, std::string_view channel,
                       std::string_view message) {
  using commands::PubSubKind;
  int64_t receivers = 0;
  // Messages take their place among the subscriber's replies, so order is kept per connection;
  // a subscriber that cannot keep up is cut off by its output limit, never slowing the publisher.
  auto deliver = [&](Connection* conn, std::string_view kind_word, const std::string* pattern) {
    proto::ReplyWriter writer(ReplyTarget(conn), conn->client.resp_version);
    writer.PushHeader(pattern != nullptr ? 4 : 3);
    writer.Bulk(kind_word);
    if (pattern != nullptr) writer.Bulk(*pattern);
    writer.Bulk(channel);
    writer.Bulk(message);
    ++receivers;
  };
  if (kind == PubSubKind::kShardChannel) {
    auto& map = subscribers_[static_cast<int>(PubSubKind::kShardChannel)];
    if (auto it = map.find(channel); it != map.end()) {
      for (Connection* conn : it->second) deliver(conn, "smessage", nullptr);
    }
    return receivers;
  }
  auto& channels = subscribers_[static_cast<int>(PubSubKind::kChannel)];
  if (auto it = channels.find(channel); it != channels.end()) {
    for (Connection* conn : it->second) deliver(conn, "message", nullptr);
  }
  for (auto& [pattern, conns] : subscribers_[static_cast<int>(PubSubKind::kPattern)]) {
    if (!commands::StringMatch(pattern, channel)) continue;
    for (Connection* conn : conns) deliver(conn, "pmessage", &pattern);
  }
  receivers += BinaryPublish(channel, message);
  return receivers;
}

void Shard::ActiveSubscriptions(commands::PubSubKind kind, std::vector<std::string>* out) {
  for (const auto& [name, conns] : subscribers_[static_cast<int>(kind)]) out->push_back(name);
}

int64_t Shard::SubscriberCount(commands::PubSubKind kind, std::string_view name) {
  const auto& map = subscribers_[static_cast<int>(kind)];
  auto it = map.find(name);
  return it == map.end() ? 0 : static_cast<int64_t>(it->second.size());
}

}  // namespace keep::shard
