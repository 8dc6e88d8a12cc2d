// One client connection, owned by the shard that accepted it. Replies leave in request order:
// while an earlier reply is still being computed on another shard (a PendingReply slot), the
// replies produced behind it wait in `held`, and the slot marks its place there (design §2.4).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/commands/command.h"
#include "dataplane/proto/resp_parser.h"
#include "dataplane/shard/binary_session.h"
#include "dataplane/shard/io_buffer.h"

namespace keep::shard {

struct PendingReply {
  std::string bytes;  // the reply, when it arrived before one owed ahead of it
  bool ready = false;
  // The owning shard writes this reply to the socket itself; what comes back is what it could not
  // send (usually nothing). See Shard::Forward.
  bool direct = false;
  size_t held_offset = 0;  // RESP: where in Connection::held this reply goes
  // Binary connections: the request this reply answers (replies leave as they complete).
  uint32_t binary_id = 0;
  uint8_t binary_op = 0;
  uint8_t binary_flags = 0;
};

struct Connection {
  int fd = -1;
  commands::ClientState client;
  IoBuffer in;              // unparsed input (empty while every request read was complete)
  size_t parse_needed = 0;  // skip parsing until `in` holds this many bytes
  std::string out;          // replies ready to send
  size_t out_sent = 0;      // bytes of `out` already sent
  // RESP replies produced while an earlier one is still owed, in request order, and how much of
  // them has moved on to `out`.
  std::string held;
  size_t held_moved = 0;
  std::deque<PendingReply*> pending;  // replies owed by other shards, in request order
  uint32_t inflight = 0;              // envelopes and joins that still point at this connection
  // Replies another shard is writing to this socket itself, and whether anything produced since
  // waits for them (then that shard wakes this one when they are done: Shard::direct_waiters_).
  uint32_t direct_inflight = 0;
  bool awaits_direct = false;
  // Closed while another shard may still write to it: shut down, and closed once it is done, so
  // the descriptor cannot be reused for a new client in between.
  int lingering_fd = -1;
  uint32_t epoll_events = 0;       // the interest set registered now
  size_t accounted_bytes = 0;      // buffer capacity counted in the shard's memory use
  bool closed = false;             // fd closed; freed when inflight drops to zero
  bool close_after_flush = false;  // QUIT, protocol error, CLIENT KILL: read no more
  bool in_write_list = false;
  bool in_resume_list = false;
  proto::RespParser parser;
  bool protocol_known = false;          // the first byte chose RESP or binary
  std::unique_ptr<BinaryState> binary;  // binary protocol connections only

  explicit Connection(const proto::RespLimits& limits) : parser(limits) {}

  size_t unsent() const { return out.size() - out_sent; }
  size_t held_bytes() const { return held.size() - held_moved; }
};

}  // namespace keep::shard
