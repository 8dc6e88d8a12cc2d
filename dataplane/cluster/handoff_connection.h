// One authenticated handoff connection on the control thread: length-checked, MAC-checked,
// sequence-checked message reads with a deadline, and a write queue with a deadline per write.
// Any failure closes the socket once and reports why through `on_close`; nothing is retried here.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/cluster/handoff_codec.h"

namespace keep::cluster {

class HandoffConnection : public std::enable_shared_from_this<HandoffConnection> {
 public:
  using Clock = std::chrono::steady_clock;
  // `frame` is the whole message (length field included); the view ends with the handler.
  using ReadHandler = std::function<void(std::string_view frame)>;

  HandoffConnection(boost::asio::ip::tcp::socket socket, size_t max_length);

  boost::asio::ip::tcp::socket& socket() { return socket_; }
  void set_send_key(const HandoffKey& key) { send_key_ = key; }
  void set_receive_key(const HandoffKey& key) { receive_key_ = key; }

  // Seals and queues one message (the sequence numbers are this connection's).
  void Send(HandoffType type, std::string_view body);
  // Reads the next whole message, checking only its length bound; for HELLO_ACK, whose key
  // depends on its own body. Fails (closes) when nothing complete arrives within `timeout`.
  void ReadFrame(std::chrono::milliseconds timeout, ReadHandler handler);
  // Reads and opens the next message with the receive key and the next sequence number.
  void Read(std::chrono::milliseconds timeout, std::function<void(const OpenedMessage&)> handler);
  // Checks a frame read by ReadFrame with `key` (consumes the next receive sequence number).
  OpenStatus Open(const HandoffKey& key, std::string_view frame, OpenedMessage* out);

  // Calls `callback` once, when the write queue has at most `low_water` messages left (now, if
  // it already has). Several callbacks may wait at once.
  void OnWritable(size_t low_water, std::function<void()> callback);
  size_t queued() const { return queue_.size(); }
  // Closes after every queued message was written (or the write deadline passed).
  void CloseAfterWrites(std::string reason);
  void Close(std::string reason);
  bool closed() const { return closed_; }
  std::function<void(const std::string& reason, bool protocol_violation)> on_close;
  void set_write_timeout(std::chrono::milliseconds timeout) { write_timeout_ = timeout; }

  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }

  // Closes with a protocol violation (counted as a rejected message by the engine).
  void Reject(std::string reason);

 private:
  void WriteNext();
  void RunWritable();
  void Finish(std::string reason, bool violation);

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer read_timer_;
  boost::asio::steady_timer write_timer_;
  size_t max_length_;
  HandoffKey send_key_{};
  HandoffKey receive_key_{};
  uint64_t send_sequence_ = 0;
  uint64_t receive_sequence_ = 0;
  std::deque<std::string> queue_;
  bool writing_ = false;
  bool closing_ = false;
  bool closed_ = false;
  std::string close_reason_;
  std::string frame_;
  std::vector<std::pair<size_t, std::function<void()>>> on_writable_;
  std::chrono::milliseconds write_timeout_{5000};
  uint64_t bytes_sent_ = 0;
  uint64_t bytes_received_ = 0;
};

}  // namespace keep::cluster
