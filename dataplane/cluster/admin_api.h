// The admin HTTP contract between the transport (server/admin_http.*, Boost.Beast) and the
// cluster's handlers (ClusterControl::HandleAdmin): plain structs, so handlers are tested
// without sockets.
#pragma once

#include <string>

namespace keep::cluster {

struct AdminRequest {
  std::string method;  // "GET", "PUT", "POST", ...
  std::string target;  // path with query, e.g. "/v1/cluster"
  std::string authorization;
  std::string body;
};

struct AdminResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

}  // namespace keep::cluster
