#include "dataplane/server/listeners.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace keep::server {

namespace {

int OpenOne(const std::string& bind, int port, bool reuseport, int backlog, std::string* error) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, bind.c_str(), &address.sin_addr) != 1) {
    *error = "invalid bind address '" + bind + "' (an IPv4 address is expected)";
    return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + strerror(errno);
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(fd, backlog) != 0) {
    *error = "cannot listen on " + bind + ":" + std::to_string(port) + ": " + strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  return ntohs(address.sin_port);
}

}  // namespace

std::string OpenListeners(const std::string& bind, int port, int shard_port_base, int shards,
                          int backlog, ListenerSet* out) {
  std::string error;
  auto fail = [&]() {
    for (int fd : out->client_fds) close(fd);
    for (int fd : out->shard_fds) close(fd);
    out->client_fds.clear();
    out->shard_fds.clear();
    return error;
  };
  for (int i = 0; i < shards; ++i) {
    int fd = OpenOne(bind, i == 0 ? port : out->client_port, true, backlog, &error);
    if (fd < 0) return fail();
    if (i == 0) out->client_port = BoundPort(fd);
    out->client_fds.push_back(fd);
  }
  if (shard_port_base > 0) {
    for (int i = 0; i < shards; ++i) {
      int fd = OpenOne(bind, shard_port_base + i, false, backlog, &error);
      if (fd < 0) return fail();
      out->shard_fds.push_back(fd);
    }
  }
  return "";
}

std::string AttachCpuSteering(int any_client_fd, const std::vector<int>& shard_cpus) {
  if (shard_cpus.size() > 200) return "too many shards for CPU steering";
  // A = current CPU; for each shard: if A == cpu return index; else fall back to the hash.
  std::vector<sock_filter> program;
  program.push_back(
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<uint32_t>(SKF_AD_OFF + SKF_AD_CPU)));
  size_t count = shard_cpus.size();
  for (size_t i = 0; i < count; ++i) {
    // From compare i, the return of shard i is `count` instructions further on.
    uint8_t to_return = static_cast<uint8_t>(count);
    program.push_back(
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(shard_cpus[i]), to_return, 0));
  }
  program.push_back(BPF_STMT(BPF_RET | BPF_K, 0xffffffffu));  // out of range: kernel hashes
  for (size_t i = 0; i < count; ++i) {
    program.push_back(BPF_STMT(BPF_RET | BPF_K, static_cast<uint32_t>(i)));
  }
  sock_fprog fprog{static_cast<unsigned short>(program.size()), program.data()};
  if (setsockopt(any_client_fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fprog, sizeof(fprog)) != 0) {
    return std::string("SO_ATTACH_REUSEPORT_CBPF: ") + strerror(errno);
  }
  return "";
}

}  // namespace keep::server
