// Listening sockets: the client port, shared by every shard through SO_REUSEPORT, and one
// shard port per shard (design §2.3).
#pragma once

#include <string>
#include <vector>

namespace keep::server {

struct ListenerSet {
  std::vector<int> client_fds;  // one per shard, same port
  std::vector<int> shard_fds;   // one per shard, base+i; empty when shard ports are off
  int client_port = 0;          // the port bound (useful when asked for port 0)
};

// Binds everything or returns an error message naming the address that failed.
std::string OpenListeners(const std::string& bind, int port, int shard_port_base, int shards,
                          int backlog, ListenerSet* out);

// Steers each new connection to the shard pinned on the CPU that took its interrupt, so a
// connection stays on one core end to end. `shard_cpus[i]` is the CPU of shard i.
std::string AttachCpuSteering(int any_client_fd, const std::vector<int>& shard_cpus);

}  // namespace keep::server
