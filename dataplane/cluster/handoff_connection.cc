#include "dataplane/cluster/handoff_connection.h"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace keep::cluster {

namespace asio = boost::asio;

HandoffConnection::HandoffConnection(asio::ip::tcp::socket socket, size_t max_length)
    : socket_(std::move(socket)),
      read_timer_(socket_.get_executor()),
      write_timer_(socket_.get_executor()),
      max_length_(max_length) {
  boost::system::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
}

void HandoffConnection::Send(HandoffType type, std::string_view body) {
  if (closed_ || closing_) return;
  queue_.push_back(SealMessage(send_key_, type, send_sequence_++, body));
  if (!writing_) WriteNext();
}

void HandoffConnection::WriteNext() {
  if (closed_) return;
  if (queue_.empty()) {
    writing_ = false;
    if (closing_) Finish(close_reason_, false);
    return;
  }
  writing_ = true;
  write_timer_.expires_after(write_timeout_);
  auto self = shared_from_this();
  write_timer_.async_wait([self](const boost::system::error_code& error) {
    if (!error) self->Finish("write deadline passed", false);
  });
  asio::async_write(socket_, asio::buffer(queue_.front()),
                    [self](const boost::system::error_code& error, size_t written) {
                      self->write_timer_.cancel();
                      if (self->closed_) return;
                      if (error) {
                        self->Finish("write failed: " + error.message(), false);
                        return;
                      }
                      self->bytes_sent_ += written;
                      self->queue_.pop_front();
                      self->RunWritable();
                      self->WriteNext();
                    });
}

void HandoffConnection::OnWritable(size_t low_water, std::function<void()> callback) {
  if (queue_.size() <= low_water) {
    callback();
    return;
  }
  on_writable_.emplace_back(low_water, std::move(callback));
}

void HandoffConnection::RunWritable() {
  if (on_writable_.empty()) return;
  std::vector<std::function<void()>> ready;
  std::erase_if(on_writable_, [&](auto& waiter) {
    if (queue_.size() > waiter.first) return false;
    ready.push_back(std::move(waiter.second));
    return true;
  });
  for (auto& callback : ready) {
    if (closed_) return;
    callback();
  }
}

void HandoffConnection::ReadFrame(std::chrono::milliseconds timeout, ReadHandler handler) {
  if (closed_) return;
  auto self = shared_from_this();
  read_timer_.expires_after(timeout);
  read_timer_.async_wait([self](const boost::system::error_code& error) {
    if (!error) self->Finish("read deadline passed", false);
  });
  frame_.resize(kHandoffLengthBytes);
  asio::async_read(
      socket_, asio::buffer(frame_.data(), kHandoffLengthBytes),
      [self, handler = std::move(handler)](const boost::system::error_code& error, size_t) mutable {
        if (self->closed_) return;
        if (error) {
          self->read_timer_.cancel();
          self->Finish(
              error == asio::error::eof ? "peer closed" : "read failed: " + error.message(), false);
          return;
        }
        uint32_t length = 0;
        OpenStatus status = CheckLength(reinterpret_cast<const uint8_t*>(self->frame_.data()),
                                        self->max_length_, &length);
        if (status != OpenStatus::kOk) {
          self->read_timer_.cancel();
          self->Reject(std::string("message ") + OpenStatusName(status));
          return;
        }
        self->frame_.resize(kHandoffLengthBytes + length);
        asio::async_read(
            self->socket_, asio::buffer(self->frame_.data() + kHandoffLengthBytes, length),
            [self, handler = std::move(handler)](const boost::system::error_code& error, size_t) {
              self->read_timer_.cancel();
              if (self->closed_) return;
              if (error) {
                // A message cut short by the peer closing is a truncated message.
                self->Reject("message truncated: " + error.message());
                return;
              }
              self->bytes_received_ += self->frame_.size();
              handler(self->frame_);
            });
      });
}

OpenStatus HandoffConnection::Open(const HandoffKey& key, std::string_view frame,
                                   OpenedMessage* out) {
  OpenStatus status = OpenMessage(key, receive_sequence_, frame, max_length_, out);
  if (status == OpenStatus::kOk) ++receive_sequence_;
  return status;
}

void HandoffConnection::Read(std::chrono::milliseconds timeout,
                             std::function<void(const OpenedMessage&)> handler) {
  auto self = shared_from_this();
  ReadFrame(timeout, [self, handler = std::move(handler)](std::string_view frame) {
    OpenedMessage message;
    OpenStatus status = self->Open(self->receive_key_, frame, &message);
    if (status != OpenStatus::kOk) {
      self->Reject(std::string("message rejected: ") + OpenStatusName(status));
      return;
    }
    handler(message);
  });
}

void HandoffConnection::CloseAfterWrites(std::string reason) {
  if (closed_ || closing_) return;
  closing_ = true;
  close_reason_ = std::move(reason);
  if (!writing_) Finish(close_reason_, false);
}

void HandoffConnection::Close(std::string reason) { Finish(std::move(reason), false); }
void HandoffConnection::Reject(std::string reason) { Finish(std::move(reason), true); }

void HandoffConnection::Finish(std::string reason, bool violation) {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  read_timer_.cancel();
  write_timer_.cancel();
  queue_.clear();
  on_writable_.clear();
  if (on_close) {
    auto callback = std::move(on_close);
    on_close = nullptr;
    callback(reason, violation);
  }
}

}  // namespace keep::cluster
