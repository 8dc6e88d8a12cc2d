// keep-floor: the cheapest possible RESP responder, the floor every figure is read against.
//
// N threads, each with its own SO_REUSEPORT listener and level-triggered epoll loop. Per ready
// connection and loop turn: one read of up to 64 KiB, a scan that only finds request boundaries
// (and the command name), fixed replies appended to the connection's output, one send. Nothing
// is stored. What it costs per request is the kernel's loopback path plus a few hundred
// instructions, so a server's CPU per request minus the floor's is what the server itself spends.
//
// Replies: PING +PONG; GET a fixed 128-byte bulk string (or $-1 with --get-reply nil); INCR :1;
// everything else (SET, CONFIG, unknown commands) +OK.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace keep::floor {
namespace {

constexpr size_t kReadSize = 64 * 1024;
constexpr size_t kNameMax = 16;
// Stop reading a connection whose replies pile up past this until the client drains them.
constexpr size_t kMaxPendingOut = 4 * 1024 * 1024;

struct Settings {
  std::string bind = "127.0.0.1";
  int port = 7777;
  int threads = 1;
  bool get_nil = false;
};

enum class State : uint8_t { kStart, kCount, kLineEnd, kBulkHeader, kBulkLen, kBulkBody, kInline };

// Finds request boundaries across reads without buffering requests: headers byte by byte, bulk
// bodies skipped in one step; only the first argument's first bytes (the name) are kept.
struct Parser {
  State state = State::kStart;
  // After kLineEnd: go to the bulk body (true) or to the next bulk header (false).
  bool line_ends_count = false;
  int64_t number = 0;
  int64_t args_left = 0;
  int64_t bulk_left = 0;
  bool first_arg = false;
  bool inline_in_word = true;
  char name[kNameMax];
  size_t name_len = 0;
};

struct Conn {
  int fd = -1;
  Parser parser;
  std::string out;
  size_t out_sent = 0;
  bool want_write = false;
  bool reading = true;
};

class Replies {
 public:
  explicit Replies(bool get_nil) {
    get_ = get_nil ? "$-1\r\n" : "$128\r\n" + std::string(128, 'v') + "\r\n";
  }
  void Append(const Parser& p, std::string* out) const {
    std::string_view name(p.name, p.name_len);
    if (name == "GET") {
      out->append(get_);
    } else if (name == "PING") {
      out->append("+PONG\r\n");
    } else if (name == "INCR") {
      out->append(":1\r\n");
    } else {
      out->append("+OK\r\n");
    }
  }

 private:
  std::string get_;
};

void AddNameByte(Parser& p, char c) {
  if (p.name_len < kNameMax) {
    p.name[p.name_len++] = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  }
}

// Consumes `data`, appending a reply per complete request. False on a protocol error.
bool Feed(Parser& p, const char* data, size_t size, const Replies& replies, std::string* out) {
  size_t i = 0;
  while (i < size) {
    char c = data[i];
    switch (p.state) {
      case State::kStart:
        p.name_len = 0;
        p.number = 0;
        if (c == '*') {
          p.state = State::kCount;
          ++i;
        } else if (c == '\r' || c == '\n') {
          ++i;
        } else {
          p.state = State::kInline;
          p.inline_in_word = true;
        }
        break;
      case State::kInline:
        ++i;
        if (c == '\n') {
          if (p.name_len > 0) replies.Append(p, out);
          p.state = State::kStart;
        } else if (c == ' ' || c == '\r') {
          p.inline_in_word = false;
        } else if (p.inline_in_word) {
          AddNameByte(p, c);
        }
        break;
      case State::kCount:
      case State::kBulkLen:
        ++i;
        if (c >= '0' && c <= '9') {
          p.number = p.number * 10 + (c - '0');
          if (p.number > (int64_t{1} << 40)) return false;
        } else if (c == '-') {
          p.number = -1'000'000;  // negative count: an empty request
        } else if (c == '\r') {
          p.line_ends_count = p.state == State::kCount;
          p.state = State::kLineEnd;
        } else {
          return false;
        }
        break;
      case State::kLineEnd:
        ++i;
        if (c != '\n') return false;
        if (p.line_ends_count) {
          if (p.number <= 0) {
            p.state = State::kStart;
          } else {
            p.args_left = p.number;
            p.first_arg = true;
            p.state = State::kBulkHeader;
          }
        } else {
          if (p.number < 0) return false;
          p.bulk_left = p.number + 2;
          p.state = State::kBulkBody;
        }
        break;
      case State::kBulkHeader:
        ++i;
        if (c != '$') return false;
        p.number = 0;
        p.state = State::kBulkLen;
        break;
      case State::kBulkBody: {
        size_t take = std::min<size_t>(size - i, static_cast<size_t>(p.bulk_left));
        if (p.first_arg) {
          // The name's bytes, not its trailing CRLF.
          size_t body_left = p.bulk_left > 2 ? static_cast<size_t>(p.bulk_left - 2) : 0;
          for (size_t k = 0; k < std::min(take, body_left); ++k) AddNameByte(p, data[i + k]);
        }
        i += take;
        p.bulk_left -= static_cast<int64_t>(take);
        if (p.bulk_left == 0) {
          p.first_arg = false;
          if (--p.args_left == 0) {
            replies.Append(p, out);
            p.state = State::kStart;
          } else {
            p.number = 0;
            p.state = State::kBulkHeader;
          }
        }
        break;
      }
    }
  }
  return true;
}

class Loop {
 public:
  Loop(const Settings& settings, const Replies& replies) : settings_(settings), replies_(replies) {}
  bool Listen(std::string* error);
  void Run();

 private:
  void Accept();
  void Close(Conn* c);
  void Serve(Conn* c, uint32_t events);
  void Update(Conn* c, bool want_read, bool want_write);

  const Settings& settings_;
  const Replies& replies_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  char buffer_[kReadSize];
};

bool Loop::Listen(std::string* error) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(settings_.port));
  if (inet_pton(AF_INET, settings_.bind.c_str(), &addr.sin_addr) != 1) {
    *error = "--bind: '" + settings_.bind + "' is not an IPv4 address";
    return false;
  }
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 ||
      listen(listen_fd_, 511) < 0) {
    *error = "cannot listen on " + settings_.bind + ":" + std::to_string(settings_.port) + ": " +
             std::strerror(errno);
    return false;
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the listener
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  return true;
}

void Loop::Accept() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto* c = new Conn;
    c->fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
}

void Loop::Close(Conn* c) {
  close(c->fd);  // also removes it from the epoll set
  delete c;
}

void Loop::Update(Conn* c, bool want_read, bool want_write) {
  if (c->reading == want_read && c->want_write == want_write) return;
  epoll_event ev{};
  ev.events = (want_read ? EPOLLIN : 0u) | (want_write ? EPOLLOUT : 0u);
  ev.data.ptr = c;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
  c->reading = want_read;
  c->want_write = want_write;
}

void Loop::Serve(Conn* c, uint32_t events) {
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    ssize_t n = recv(c->fd, buffer_, sizeof buffer_, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      Close(c);
      return;
    }
    if (n > 0 && !Feed(c->parser, buffer_, static_cast<size_t>(n), replies_, &c->out)) {
      static const char kError[] = "-ERR Protocol error\r\n";
      send(c->fd, kError, sizeof kError - 1, MSG_NOSIGNAL);
      Close(c);
      return;
    }
  }
  if (c->out_sent < c->out.size()) {
    ssize_t n = send(c->fd, c->out.data() + c->out_sent, c->out.size() - c->out_sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      Close(c);
      return;
    }
    if (n > 0) c->out_sent += static_cast<size_t>(n);
    if (c->out_sent == c->out.size()) {
      c->out.clear();
      c->out_sent = 0;
    } else if (c->out_sent > c->out.size() / 2) {
      c->out.erase(0, c->out_sent);
      c->out_sent = 0;
    }
  }
  size_t pending = c->out.size() - c->out_sent;
  Update(c, pending<kMaxPendingOut, pending> 0);
}

void Loop::Run() {
  epoll_event events[512];
  for (;;) {
    int n = epoll_wait(epoll_fd_, events, 512, -1);
    for (int i = 0; i < n; ++i) {
      auto* c = static_cast<Conn*>(events[i].data.ptr);
      if (c == nullptr) {
        Accept();
      } else {
        Serve(c, events[i].events);
      }
    }
  }
}

int Main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](int* out, int min, int max) {
      if (i + 1 >= argc) return false;
      std::string_view v = argv[++i];
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
      return ec == std::errc() && end == v.data() + v.size() && *out >= min && *out <= max;
    };
    if (arg == "--port") {
      if (!value(&s.port, 1, 65535)) {
        std::fprintf(stderr, "keep-floor: --port needs a port from 1 to 65535\n");
        return 1;
      }
    } else if (arg == "--threads") {
      if (!value(&s.threads, 1, 256)) {
        std::fprintf(stderr, "keep-floor: --threads needs a count from 1 to 256\n");
        return 1;
      }
    } else if (arg == "--bind" && i + 1 < argc) {
      s.bind = argv[++i];
    } else if (arg == "--get-reply" && i + 1 < argc) {
      std::string_view v = argv[++i];
      if (v != "nil" && v != "bulk") {
        std::fprintf(stderr, "keep-floor: --get-reply takes nil or bulk\n");
        return 1;
      }
      s.get_nil = v == "nil";
    } else {
      std::fprintf(stderr,
                   "usage: keep-floor [--port P] [--threads N] [--bind 127.0.0.1] "
                   "[--get-reply bulk|nil]\n");
      return arg == "--help" || arg == "-h" ? 0 : 1;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  Replies replies(s.get_nil);
  std::vector<std::unique_ptr<Loop>> loops;
  for (int i = 0; i < s.threads; ++i) {
    loops.push_back(std::make_unique<Loop>(s, replies));
    std::string error;
    if (!loops.back()->Listen(&error)) {
      std::fprintf(stderr, "keep-floor: %s\n", error.c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "keep-floor: listening on %s:%d with %d threads\n", s.bind.c_str(), s.port,
               s.threads);
  std::vector<std::thread> threads;
  for (auto& loop : loops) threads.emplace_back([&loop] { loop->Run(); });
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace
}  // namespace keep::floor

int main(int argc, char** argv) { return keep::floor::Main(argc, argv); }
