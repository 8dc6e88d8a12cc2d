// The admin HTTP server (design §4): Boost.Beast on the control thread's io_context. It only
// speaks HTTP/1.1; what each path means is decided by the handler (ClusterControl::HandleAdmin),
// so the routes are tested without sockets. Requests are bounded (16 KiB of headers, 1 MiB of
// body, 10 s per request) before anything is allocated for them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio.hpp>

#include "dataplane/cluster/admin_api.h"

namespace keep::server {

using AdminHandler = std::function<cluster::AdminResponse(const cluster::AdminRequest&)>;

class AdminHttpServer {
 public:
  AdminHttpServer(boost::asio::io_context& io, AdminHandler handler);
  ~AdminHttpServer();

  // Binds and starts accepting; returns an error message or "".
  std::string Listen(const std::string& address, int port);
  int port() const { return port_; }
  // Control thread (or before io.run()).
  void Stop();

 private:
  void Accept();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<AdminHandler> handler_;
  int port_ = 0;
};

}  // namespace keep::server
