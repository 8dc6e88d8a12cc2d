#include "dataplane/server/admin_http.h"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>

namespace keep::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr size_t kHeaderLimit = 16 * 1024;
constexpr size_t kBodyLimit = 1024 * 1024;
constexpr auto kRequestTimeout = std::chrono::seconds(10);

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<AdminHandler> handler)
      : stream_(std::move(socket)), handler_(std::move(handler)) {}

  void Start() { Read(); }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kRequestTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == asio::error::eof) {
      Close();
      return;
    }
    if (ec) {
      // Garbage, oversize headers or body: one 400 and close.
      cluster::AdminResponse bad{ec == http::error::body_limit ? 413 : 400, "application/json",
                                 "{\"error\":\"bad request: " + ec.message() + "\"}\n"};
      Write(bad, false, 11);
      return;
    }
    auto& request = parser_->get();
    cluster::AdminRequest admin;
    admin.method = std::string(request.method_string());
    admin.target = std::string(request.target());
    if (auto it = request.find(http::field::authorization); it != request.end()) {
      admin.authorization = std::string(it->value());
    }
    admin.body = std::move(request.body());
    cluster::AdminResponse response = (*handler_)(admin);
    Write(response, request.keep_alive(), request.version());
  }

  void Write(const cluster::AdminResponse& r, bool keep_alive, unsigned version) {
    auto response = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version);
    response->set(http::field::server, "keep-server");
    response->set(http::field::content_type, r.content_type);
    response->keep_alive(keep_alive);
    response->body() = r.body;
    response->prepare_payload();
    stream_.expires_after(kRequestTimeout);
    http::async_write(
        stream_, *response,
        [self = shared_from_this(), response, keep_alive](beast::error_code ec, size_t) {
          if (ec || !keep_alive) {
            self->Close();
            return;
          }
          self->Read();
        });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_{8192};
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<AdminHandler> handler_;
};

}  // namespace

AdminHttpServer::AdminHttpServer(asio::io_context& io, AdminHandler handler)
    : io_(io), acceptor_(io), handler_(std::make_shared<AdminHandler>(std::move(handler))) {}

AdminHttpServer::~AdminHttpServer() = default;

std::string AdminHttpServer::Listen(const std::string& address, int port) {
  beast::error_code ec;
  auto ip = asio::ip::make_address(address, ec);
  if (ec) return "invalid admin address '" + address + "'";
  tcp::endpoint endpoint(ip, static_cast<uint16_t>(port));
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return "cannot listen on the admin port " + address + ":" + std::to_string(port) + ": " +
           ec.message();
  }
  port_ = acceptor_.local_endpoint().port();
  Accept();
  return "";
}

void AdminHttpServer::Accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) std::make_shared<Session>(std::move(socket), handler_)->Start();
    Accept();
  });
}

void AdminHttpServer::Stop() {
  beast::error_code ignored;
  acceptor_.close(ignored);
}

}  // namespace keep::server
