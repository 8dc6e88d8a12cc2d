#include "bench/keep_bench/driver.h"

#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

#include "bench/keep_bench/schedule.h"

namespace keep::bench {

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {

constexpr size_t kReadChunk = 64 * 1024;
// How long in-flight requests may take to come back once issuing has stopped.
constexpr int64_t kDrainNs = 5'000'000'000;
// A server that answers nothing for this long while requests wait is hung: stop with an error
// rather than wait forever (requests mode has no other deadline).
constexpr int64_t kStallNs = 10'000'000'000;
// The loop wakes at least this often to notice an abort and publish progress.
constexpr int64_t kMaxWaitNs = 100'000'000;

struct InFlight {
  int64_t start_ns;
  uint64_t key;
  int32_t template_index;
  bool measured;
};

struct Conn {
  int fd = -1;
  RequestSource source;
  Rng rng{0};
  OpenLoopSchedule schedule;
  uint64_t next_k = 0;
  bool schedule_done = false;

  std::string out;
  size_t out_sent = 0;
  bool want_write = false;

  std::unique_ptr<char[]> in;
  size_t in_cap = 0;
  size_t in_start = 0;
  size_t in_end = 0;

  std::vector<InFlight> ring;
  size_t ring_mask = 0;
  size_t head = 0;
  size_t in_flight = 0;

  void Push(const InFlight& f) {
    ring[(head + in_flight) & ring_mask] = f;
    ++in_flight;
  }
  InFlight Pop() {
    InFlight f = ring[head];
    head = (head + 1) & ring_mask;
    --in_flight;
    return f;
  }
};

class LoadThread {
 public:
  LoadThread(const ThreadConfig& config, ThreadStats* stats)
      : config_(config),
        options_(*config.options),
        codec_(*config.codec),
        stats_(*stats),
        open_loop_(options_.rate > 0),
        pipeline_(static_cast<size_t>(options_.pipeline)) {}

  ~LoadThread() {
    if (epoll_fd_ >= 0) close(epoll_fd_);
    for (Conn& c : conns_) close(c.fd);
  }

  void Run();

 private:
  bool Setup();
  void Fill(Conn& c, int64_t now);
  void Issue(Conn& c, int64_t start_ns);
  bool Read(Conn& c);
  bool Flush(Conn& c);
  bool SetWantWrite(Conn& c, bool want);
  void Fatal(std::string message);
  bool StillIssuing(int64_t now) const;
  int64_t NextWakeNs(int64_t now) const;

  const ThreadConfig& config_;
  const Options& options_;
  const Codec& codec_;
  ThreadStats& stats_;
  const bool open_loop_;
  const size_t pipeline_;
  int epoll_fd_ = -1;
  std::vector<Conn> conns_;
  uint64_t issued_measured_ = 0;
  size_t total_in_flight_ = 0;
  // Last time a reply arrived or nothing was in flight: the stall watchdog's reference.
  int64_t last_progress_ns_ = 0;
  bool failed_ = false;
};

bool LoadThread::Setup() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    Fatal(std::string("epoll_create1: ") + std::strerror(errno));
    return false;
  }
  // Follow-ups ride on top of the pipeline, at most one per reply.
  size_t ring_size = 1;
  while (ring_size < 2 * pipeline_ + 2) ring_size <<= 1;
  int total_connections = options_.connections;
  conns_.resize(config_.fds.size());
  for (size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = conns_[i];
    c.fd = config_.fds[i];
    int index = config_.indexes[i];
    c.source = config_.workload->MakeSource(index);
    c.rng = Rng(options_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(index) + 1);
    if (open_loop_) {
      c.schedule =
          OpenLoopSchedule(config_.clock.start_ns, options_.rate, total_connections, index);
    }
    c.out.reserve(64 * 1024);
    c.in_cap = kReadChunk;
    c.in = std::make_unique<char[]>(c.in_cap);
    c.ring.resize(ring_size);
    c.ring_mask = ring_size - 1;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &c;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev) < 0) {
      Fatal(std::string("epoll_ctl: ") + std::strerror(errno));
      return false;
    }
  }
  return true;
}

void LoadThread::Fatal(std::string message) {
  if (!failed_) stats_.fatal = std::move(message);
  failed_ = true;
  config_.abort->store(true, std::memory_order_relaxed);
}

bool LoadThread::StillIssuing(int64_t now) const {
  if (options_.requests > 0) return issued_measured_ < config_.quota;
  if (open_loop_) {
    for (const Conn& c : conns_) {
      if (!c.schedule_done) return true;
    }
    return false;
  }
  return now < config_.clock.measure_end_ns;
}

void LoadThread::Issue(Conn& c, int64_t start_ns) {
  uint64_t key = 0;
  int index = 0;
  c.source.Next(c.rng, &c.out, &key, &index);
  bool measured = start_ns >= config_.clock.measure_start_ns;
  if (measured) ++issued_measured_;
  c.Push({start_ns, key, index, measured});
  ++total_in_flight_;
}

void LoadThread::Fill(Conn& c, int64_t now) {
  const bool by_count = options_.requests > 0;
  if (!open_loop_) {
    if (!by_count && now >= config_.clock.measure_end_ns) return;
    while (c.in_flight < pipeline_) {
      if (by_count && now >= config_.clock.measure_start_ns && issued_measured_ >= config_.quota) {
        return;
      }
      Issue(c, now);
    }
    return;
  }
  while (!c.schedule_done && c.in_flight < pipeline_) {
    int64_t intended = c.schedule.Intended(c.next_k);
    if (intended >= config_.clock.measure_end_ns ||
        (by_count && intended >= config_.clock.measure_start_ns &&
         issued_measured_ >= config_.quota)) {
      c.schedule_done = true;
      return;
    }
    if (intended > now) return;
    Issue(c, intended);
    ++c.next_k;
  }
}

bool LoadThread::SetWantWrite(Conn& c, bool want) {
  if (c.want_write == want) return true;
  epoll_event ev{};
  ev.events = want ? EPOLLIN | EPOLLOUT : EPOLLIN;
  ev.data.ptr = &c;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev) < 0) {
    Fatal(std::string("epoll_ctl: ") + std::strerror(errno));
    return false;
  }
  c.want_write = want;
  return true;
}

bool LoadThread::Flush(Conn& c) {
  while (c.out_sent < c.out.size()) {
    ssize_t n = send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Keep the unsent tail at the front so the buffer does not creep.
      if (c.out_sent > c.out.size() / 2) {
        c.out.erase(0, c.out_sent);
        c.out_sent = 0;
      }
      return SetWantWrite(c, true);
    }
    Fatal(std::string("send to the server failed: ") + std::strerror(errno));
    return false;
  }
  c.out.clear();
  c.out_sent = 0;
  return SetWantWrite(c, false);
}

bool LoadThread::Read(Conn& c) {
  if (c.in_end == c.in_cap) {
    if (c.in_start > 0) {
      std::memmove(c.in.get(), c.in.get() + c.in_start, c.in_end - c.in_start);
      c.in_end -= c.in_start;
      c.in_start = 0;
    } else {
      // One reply larger than the buffer (big values): grow, rarely.
      auto bigger = std::make_unique<char[]>(c.in_cap * 2);
      std::memcpy(bigger.get(), c.in.get(), c.in_end);
      c.in = std::move(bigger);
      c.in_cap *= 2;
    }
  }
  ssize_t n = recv(c.fd, c.in.get() + c.in_end, c.in_cap - c.in_end, 0);
  if (n == 0) {
    Fatal("the server closed a connection");
    return false;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
    Fatal(std::string("recv from the server failed: ") + std::strerror(errno));
    return false;
  }
  c.in_end += static_cast<size_t>(n);
  const int64_t now = NowNs();
  last_progress_ns_ = now;
  while (c.in_start < c.in_end) {
    std::string_view pending(c.in.get() + c.in_start, c.in_end - c.in_start);
    Reply reply = codec_.Parse(pending);
    if (reply.status == ParseStatus::kIncomplete) break;
    if (reply.status == ParseStatus::kInvalid) {
      std::string shown;
      for (char ch : pending.substr(0, 48)) {
        shown += (ch >= 32 && ch < 127) ? std::string(1, ch)
                                        : (ch == '\r'   ? "\\r"
                                           : ch == '\n' ? "\\n"
                                                        : "?");
      }
      Fatal("cannot parse a reply from the server: '" + shown + "'");
      return false;
    }
    if (c.in_flight == 0) {
      Fatal("the server sent a reply with no request outstanding");
      return false;
    }
    InFlight f = c.Pop();
    --total_in_flight_;
    ++stats_.total;
    stats_.last_reply_ns = now;
    if (f.measured) {
      stats_.histogram.Record(static_cast<uint64_t>(std::max<int64_t>(0, now - f.start_ns)));
      ++stats_.measured;
      if (reply.kind == ReplyKind::kError) {
        ++stats_.errors;
        if (stats_.first_error.empty()) stats_.first_error.assign(reply.text);
      } else if (reply.kind == ReplyKind::kNil) {
        ++stats_.nils;
      }
    }
    int follow_up = -1;
    if (c.source.FollowUp(f.template_index, f.key, reply, &c.out, &follow_up)) {
      c.Push({now, f.key, follow_up, now >= config_.clock.measure_start_ns});
      ++total_in_flight_;
      ++stats_.follow_ups;
    }
    c.in_start += reply.consumed;
  }
  if (c.in_start == c.in_end) c.in_start = c.in_end = 0;
  if (!open_loop_) Fill(c, now);
  return Flush(c);
}

int64_t LoadThread::NextWakeNs(int64_t now) const {
  int64_t wake = now + kMaxWaitNs;
  if (open_loop_) {
    for (const Conn& c : conns_) {
      if (!c.schedule_done && c.in_flight < pipeline_) {
        wake = std::min(wake, c.schedule.Intended(c.next_k));
      }
    }
  } else if (options_.requests == 0 && now < config_.clock.measure_end_ns) {
    wake = std::min(wake, config_.clock.measure_end_ns);
  }
  return wake;
}

void LoadThread::Run() {
  if (!Setup()) return;
  if (open_loop_) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  int64_t now = NowNs();
  last_progress_ns_ = now;
  for (Conn& c : conns_) {
    Fill(c, now);
    if (!Flush(c)) return;
  }
  epoll_event events[256];
  bool use_pwait2 = true;
  // Duration mode: everything ends kDrainNs after the window whatever the server does; requests
  // mode: kDrainNs after the last measured request was issued.
  int64_t deadline = options_.requests > 0 ? INT64_MAX : config_.clock.measure_end_ns + kDrainNs;
  for (;;) {
    if (config_.abort->load(std::memory_order_relaxed)) break;
    if (!StillIssuing(now)) {
      if (total_in_flight_ == 0) break;
      if (deadline == INT64_MAX) deadline = now + kDrainNs;
    }
    if (now >= deadline) {
      stats_.unfinished = total_in_flight_;
      break;
    }
    if (total_in_flight_ == 0) {
      last_progress_ns_ = now;
    } else if (now - last_progress_ns_ > kStallNs) {
      Fatal("the server has not replied for " + std::to_string(kStallNs / 1'000'000'000) +
            " s with " + std::to_string(total_in_flight_) + " requests in flight");
      break;
    }
    int64_t wait_ns = std::clamp<int64_t>(NextWakeNs(now) - now, 0, deadline - now);
    int n;
    if (use_pwait2) {
      timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000),
                  static_cast<long>(wait_ns % 1'000'000'000)};
      n = epoll_pwait2(epoll_fd_, events, 256, &ts, nullptr);
      if (n < 0 && errno == ENOSYS) {
        use_pwait2 = false;
        continue;
      }
    } else {
      n = epoll_wait(epoll_fd_, events, 256, static_cast<int>((wait_ns + 999'999) / 1'000'000));
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      Fatal(std::string("epoll_wait: ") + std::strerror(errno));
      break;
    }
    for (int i = 0; i < n && !failed_; ++i) {
      Conn& c = *static_cast<Conn*>(events[i].data.ptr);
      if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        if (!Read(c)) break;
      } else if (events[i].events & EPOLLOUT) {
        if (!Flush(c)) break;
      }
    }
    if (failed_) break;
    now = NowNs();
    if (open_loop_) {
      for (Conn& c : conns_) {
        size_t before = c.out.size();
        Fill(c, now);
        if (c.out.size() != before && !c.want_write && !Flush(c)) break;
      }
      if (failed_) break;
    }
    config_.progress->replies.store(stats_.total, std::memory_order_relaxed);
    config_.progress->errors.store(stats_.errors, std::memory_order_relaxed);
  }
  if (open_loop_ && !failed_) {
    // Requests that were due inside the window but never left are queueing too: count them.
    for (const Conn& c : conns_) {
      if (c.schedule_done) continue;
      uint64_t due = c.schedule.DueBy(std::min(now, config_.clock.measure_end_ns - 1));
      if (due > c.next_k) stats_.unfinished += due - c.next_k;
    }
  }
  config_.progress->replies.store(stats_.total, std::memory_order_relaxed);
}

}  // namespace

void RunLoadThread(const ThreadConfig& config, ThreadStats* stats) {
  LoadThread thread(config, stats);
  thread.Run();
}

}  // namespace keep::bench
