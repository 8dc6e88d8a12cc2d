#include "bench/keep_bench/connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace keep::bench {

int ConnectTcp(const std::string& host, int port, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    *error = "cannot resolve " + host + ": " + gai_strerror(rc);
    return -1;
  }
  int last_errno = 0;
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    last_errno = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) {
    *error = "cannot connect to " + host + ":" + service + ": " + std::strerror(last_errno);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool SetNonBlocking(int fd, std::string* error) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    *error = std::string("fcntl(O_NONBLOCK): ") + std::strerror(errno);
    return false;
  }
  return true;
}

BlockingConnection::BlockingConnection(int fd, const Codec& codec) : fd_(fd), codec_(codec) {
  timeval timeout{10, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
}

BlockingConnection::~BlockingConnection() {
  if (fd_ >= 0) close(fd_);
}

bool BlockingConnection::Send(std::string_view bytes, std::string* error) {
  while (!bytes.empty()) {
    ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::string("send: ") + std::strerror(errno);
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool BlockingConnection::ReadReply(Reply* reply, std::string* text, std::string* error) {
  for (;;) {
    std::string_view pending(in_.data() + in_start_, in_.size() - in_start_);
    *reply = codec_.Parse(pending);
    if (reply->status == ParseStatus::kInvalid) {
      *error = "cannot parse a reply from the server (starts with '" +
               std::string(pending.substr(0, 40)) + "')";
      return false;
    }
    if (reply->status == ParseStatus::kComplete) {
      if (text != nullptr) text->assign(reply->text);
      reply->text = {};
      in_start_ += reply->consumed;
      if (in_start_ == in_.size()) {
        in_.clear();
        in_start_ = 0;
      }
      return true;
    }
    char buffer[65536];
    ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        *error = "the server has not replied for 10 s";
      } else {
        *error = n == 0 ? "the server closed the connection"
                        : std::string("recv: ") + std::strerror(errno);
      }
      return false;
    }
    in_.append(buffer, static_cast<size_t>(n));
  }
}

bool BlockingConnection::Call(std::span<const std::string_view> args, Reply* reply,
                              std::string* text, std::string* error) {
  std::string request;
  codec_.Encode(args, &request, nullptr);
  return Send(request, error) && ReadReply(reply, text, error);
}

}  // namespace keep::bench
