// A small in-process server speaking the binary protocol, for libkeep's and keep-cli's tests until
// the real server does. One thread per connection; a string map as the store.
//
// Test hooks, by key: "busy*" answers BUSY (retry 1 ms) to the first two attempts of each request,
// "stuck*" always answers BUSY, "slow" never answers, "moved" answers MOVED (for COMMAND, the key
// is the command's first argument). With reverse_replies, the replies to the requests of one read
// go out in reverse order. SetHook lets a test answer any request but HELLO itself (a cluster
// member's TOPOLOGY, MOVED, FENCED).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/proto/binary_codec.h"

namespace keep::client::testing {

class FakeServer {
 public:
  struct Options {
    std::string secret;  // non-empty: HELLO must carry the proof
    bool reverse_replies = false;
    uint16_t port = 0;
  };
  // Writes the reply to `request` into *out and returns true, or returns false for the built-in
  // handling. Runs on the connection's thread with the server's lock held.
  using Hook = std::function<bool(const proto::binary::RequestView& request, std::string* out)>;

  explicit FakeServer(Options options);
  ~FakeServer();
  void SetHook(Hook hook);
  uint16_t port() const { return port_; }
  // Raw request frames received, in arrival order.
  std::vector<std::string> frames();
  // How many requests each read carried.
  std::vector<size_t> requests_per_read();
  void Wait() { accept_thread_.join(); }

 private:
  void AcceptLoop();
  void Serve(int fd);
  std::string Handle(std::string_view frame, std::string_view nonce, bool* authed,
                     std::map<uint32_t, uint64_t>* subs, std::string* extra);

  Options options_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<int> fds_;
  Hook hook_;
  std::map<std::string, std::string> store_;
  std::map<std::string, std::string> lock_owner_;
  std::map<std::string, int> busy_count_;
  int64_t next_token_ = 1;
  std::vector<std::string> frames_;
  std::vector<size_t> requests_per_read_;
};

}  // namespace keep::client::testing
