// The socket reads and writes of one step of a shard's turn, made together.
//
// A turn reads every ready connection, then writes every connection with output (design §2.2).
// Made one system call each, those reads and writes cost the kernel's entry and exit per call,
// which on a virtual machine with page-table isolation is most of a small request's cost (1.7 us
// per call measured on the development VM, against about 0.1 us of actual work). With io_uring
// every read (or write) of the step goes in one io_uring_enter: each is submitted with
// MSG_DONTWAIT, so the kernel performs it at once, as the plain call would, and answers -EAGAIN
// rather than waiting for the socket; the results are there when the call returns. Where io_uring
// is not available (an old kernel, or a seccomp profile that refuses it, as Docker's default
// does) the same batch makes the plain calls instead, as does a batch of one operation, which
// io_uring would only make dearer.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

struct io_uring;

namespace keep::shard {

class SocketBatch {
 public:
  // `capacity`: the most operations one Run performs (callers run a full batch before queueing
  // more). `use_io_uring` false, or io_uring refused, makes plain system calls.
  SocketBatch(unsigned capacity, bool use_io_uring);
  ~SocketBatch();
  SocketBatch(const SocketBatch&) = delete;
  SocketBatch& operator=(const SocketBatch&) = delete;

  bool io_uring() const { return ring_ != nullptr; }
  bool full() const { return ops_.size() >= capacity_; }
  size_t size() const { return ops_.size(); }

  // Queued in order; the buffers must stay as they are until Run returns.
  void Recv(int fd, char* buffer, size_t length);
  void Send(int fd, const char* data, size_t length);  // MSG_NOSIGNAL: a broken pipe is EPIPE

  // Performs every queued operation and empties the queue. Result i belongs to operation i: what
  // recv or send returns, bytes (0 at end of stream for a read) or -errno (-EAGAIN when the socket
  // had nothing to read or no room).
  std::span<const ssize_t> Run();

  // System calls made by Run so far (one per batch with io_uring, one per operation without).
  uint64_t system_calls() const { return system_calls_; }

 private:
  struct Op {
    int fd;
    bool send;
    char* buffer;
    size_t length;
  };
  void RunPlain();
  bool RunRing();  // false: io_uring failed, nothing was performed, ring_ is gone

  unsigned capacity_;
  std::unique_ptr<::io_uring> ring_;
  std::vector<Op> ops_;
  std::vector<ssize_t> results_;
  uint64_t system_calls_ = 0;
};

}  // namespace keep::shard
