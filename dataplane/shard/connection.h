// One client connection, owned by the shard that accepted it. Replies leave in request order:
// while an earlier reply is still being computed on another shard (a PendingReply slot), the
// replies produced behind it wait in `held`, and the slot marks its place there (design §2.4).
#pragma once

#include <cstdint>
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
  // The owning shard writes this reply, with the rest of the connection's output, to the socket
  // itself; what comes back is what it could not send (usually nothing). See Shard::HandOver.
  bool direct = false;
  size_t held_offset = 0;  // RESP: where in Connection::held this reply goes
  // Binary connections: the request this reply answers (replies leave as they complete).
  uint32_t binary_id = 0;
  uint8_t binary_op = 0;
  uint8_t binary_flags = 0;
};

// The replies a connection is owed by other shards, in request order: a ring of pointers that
// allocates nothing until the first reply is owed. std::deque allocated its first block with every
// connection, and its size() is a few loads and multiplies, asked several times a request
// (Shard::InputPaused).
class PendingQueue {
 public:
  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  PendingReply* front() const { return slots_[head_ & mask_]; }
  void pop_front() { ++head_; }
  void push_back(PendingReply* slot) {
    if (tail_ - head_ == capacity_) Grow();
    slots_[tail_++ & mask_] = slot;
  }
  void clear() { head_ = tail_ = 0; }
  template <class F>
  void ForEach(F&& f) const {
    for (size_t i = head_; i != tail_; ++i) f(slots_[i & mask_]);
  }

 private:
  void Grow() {
    const size_t grown = capacity_ == 0 ? 16 : capacity_ * 2;
    auto bigger = std::make_unique<PendingReply*[]>(grown);
    for (size_t i = head_; i != tail_; ++i) bigger[i - head_] = slots_[i & mask_];
    tail_ -= head_;
    head_ = 0;
    slots_ = std::move(bigger);
    capacity_ = grown;
    mask_ = grown - 1;
  }

  std::unique_ptr<PendingReply*[]> slots_;
  size_t head_ = 0;
  size_t tail_ = 0;
  size_t capacity_ = 0;
  size_t mask_ = 0;
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
  PendingQueue pending;   // replies owed by other shards, in request order
  uint32_t inflight = 0;  // envelopes and joins that still point at this connection
  // Another shard is writing this connection's output to its socket itself (handed over with a
  // batch: Shard::HandOver), and whether anything produced since waits for it (then that shard
  // wakes this one when it is done: Shard::direct_waiters_).
  bool direct_in_flight = false;
  bool awaits_direct = false;
  // Closed while another shard may still write to it: shut down, and closed once it is done, so
  // the descriptor cannot be reused for a new client in between.
  int lingering_fd = -1;
  uint32_t epoll_events = 0;       // the interest set registered now
  size_t accounted_bytes = 0;      // buffer capacity counted in the shard's memory use
  bool closed = false;             // fd closed (or lingering); freed when inflight drops to zero
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
