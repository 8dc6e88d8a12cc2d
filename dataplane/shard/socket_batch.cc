#include "dataplane/shard/socket_batch.h"

#include <liburing.h>
#include <sys/socket.h>

#include <cerrno>

namespace keep::shard {

SocketBatch::SocketBatch(unsigned capacity, bool use_io_uring) : capacity_(capacity) {
  ops_.reserve(capacity);
  results_.resize(capacity);
  if (!use_io_uring) return;
  ring_ = std::make_unique<::io_uring>();
  // The thread that submits reaps right after submitting: the kernel need not interrupt it to
  // run completion work. (Not IORING_SETUP_SINGLE_ISSUER: the ring is made on the thread that
  // builds the shard, and used on the shard's own.)
  int rc = io_uring_queue_init(capacity, ring_.get(), IORING_SETUP_COOP_TASKRUN);
  if (rc == -EINVAL) rc = io_uring_queue_init(capacity, ring_.get(), 0);  // before Linux 5.19
  if (rc != 0) ring_.reset();
}

SocketBatch::~SocketBatch() {
  if (ring_ != nullptr) io_uring_queue_exit(ring_.get());
}

void SocketBatch::Recv(int fd, char* buffer, size_t length) {
  ops_.push_back({fd, false, buffer, length});
}

void SocketBatch::Send(int fd, const char* data, size_t length) {
  ops_.push_back({fd, true, const_cast<char*>(data), length});
}

std::span<const ssize_t> SocketBatch::Run() {
  const size_t count = ops_.size();
  if (count == 0) return {};
  // One operation is one system call either way, and io_uring's submission and completion add to
  // it: a shard answering one request per turn (20k requests/s over 50 connections) spent 12% less
  // CPU per request with plain calls for single operations (21.6 -> 19.1 us here).
  if (ring_ == nullptr || count == 1 || !RunRing()) RunPlain();
  ops_.clear();
  return std::span<const ssize_t>(results_.data(), count);
}

void SocketBatch::RunPlain() {
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Op& op = ops_[i];
    const ssize_t n = op.send ? send(op.fd, op.buffer, op.length, MSG_NOSIGNAL | MSG_DONTWAIT)
                              : recv(op.fd, op.buffer, op.length, MSG_DONTWAIT);
    results_[i] = n >= 0 ? n : -errno;
  }
  system_calls_ += ops_.size();
}

bool SocketBatch::RunRing() {
  ::io_uring* ring = ring_.get();
  const auto count = static_cast<unsigned>(ops_.size());
  for (unsigned i = 0; i < count; ++i) {
    const Op& op = ops_[i];
    io_uring_sqe* sqe = io_uring_get_sqe(ring);  // never null: count <= capacity, all reaped
    if (op.send) {
      io_uring_prep_send(sqe, op.fd, op.buffer, op.length, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else {
      io_uring_prep_recv(sqe, op.fd, op.buffer, op.length, MSG_DONTWAIT);
    }
    io_uring_sqe_set_data64(sqe, i);
  }
  // MSG_DONTWAIT operations complete during the submission; waiting for all of them only covers
  // the kernel handing one to a worker, which then finishes it without waiting on the socket.
  const int submitted = io_uring_submit_and_wait(ring, count);
  ++system_calls_;
  if (submitted < 0 && submitted != -EINTR) {
    // The ring refuses work it accepted at setup: the batch, and every later one, makes plain
    // calls (what was queued is dropped with the ring, unperformed).
    io_uring_queue_exit(ring);
    ring_.reset();
    return false;
  }
  unsigned reaped = 0;
  while (true) {
    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(ring, head, cqe) {
      results_[io_uring_cqe_get_data64(cqe)] = cqe->res;
      ++seen;
    }
    io_uring_cq_advance(ring, seen);
    reaped += seen;
    if (reaped >= count) break;
    // Interrupted (a signal), or a completion still on its way: submit what an interrupted
    // submission left, and wait for the next completion.
    if (io_uring_sq_ready(ring) > 0) io_uring_submit(ring);
    io_uring_wait_cqe(ring, &cqe);
    system_calls_ += 2;
  }
  return true;
}

}  // namespace keep::shard
