// Sockets for keep-bench: connecting (with a clear error when the target is unreachable) and a
// blocking request/reply connection for the setup steps (SCRIPT LOAD, populating keys) that run
// before the measured load.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/keep_bench/protocol.h"

namespace keep::bench {

// A connected TCP socket with TCP_NODELAY, blocking; -1 and *error on failure
// ("cannot connect to 127.0.0.1:6390: Connection refused").
int ConnectTcp(const std::string& host, int port, std::string* error);
bool SetNonBlocking(int fd, std::string* error);

class BlockingConnection {
 public:
  // Replies that take longer than 10 s fail the read, so a mute server cannot hang the setup.
  BlockingConnection(int fd, const Codec& codec);
  ~BlockingConnection();
  BlockingConnection(const BlockingConnection&) = delete;
  BlockingConnection& operator=(const BlockingConnection&) = delete;

  bool Send(std::string_view bytes, std::string* error);
  // Reads the next reply; its text is copied to *text (errors and strings).
  bool ReadReply(Reply* reply, std::string* text, std::string* error);
  // One command, one reply.
  bool Call(std::span<const std::string_view> args, Reply* reply, std::string* text,
            std::string* error);

 private:
  int fd_;
  const Codec& codec_;
  std::string in_;
  size_t in_start_ = 0;
};

}  // namespace keep::bench
