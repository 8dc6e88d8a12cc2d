// A small Kubernetes REST client on cpprestsdk: JSON requests, server-side apply, and watch
// streams read line by line. Authentication and TLS come from a ClusterConfig; a token file is
// re-read (at most every 10 s) so a rotated service-account token is picked up.
#pragma once

#include <cpprest/http_client.h>
#include <pplx/pplxtasks.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "operator/kube/kubeconfig.h"

namespace keep::kube {

using Json = nlohmann::json;

struct Response {
  int status = 0;  // 0: transport error (see error)
  Json body;       // parsed JSON body, null when empty or not JSON
  std::string error;
  int retry_after_seconds = 0;
  bool ok() const { return status >= 200 && status < 300; }
};

// What a watch stream ended with.
struct WatchEnd {
  int status = 0;     // HTTP status when the request failed before streaming, else 200
  std::string error;  // transport error, if any
};

class Client {
 public:
  explicit Client(ClusterConfig config, std::chrono::seconds timeout = std::chrono::seconds(30));
  ~Client();

  Response Request(const std::string& method, const std::string& path,
                   const std::optional<Json>& body = std::nullopt,
                   const std::string& content_type = "application/json");
  Response Get(const std::string& path) { return Request("GET", path); }
  Response Create(const std::string& collection, const Json& object) {
    return Request("POST", collection, object);
  }
  // Server-side apply (PATCH application/apply-patch+yaml, force) with `field_manager`.
  Response Apply(const std::string& path, const Json& object, const std::string& field_manager);
  Response Delete(const std::string& path) { return Request("DELETE", path); }

  // Streams a watch: calls `on_event` with each JSON line; stops when the server closes the
  // stream, `on_event` returns false, or Cancel() is called.
  WatchEnd Watch(const std::string& path, const std::function<bool(const Json&)>& on_event);

  // Cancels every watch in flight (shutdown).
  void Cancel();

  const ClusterConfig& config() const { return config_; }

 private:
  std::string BearerToken();
  web::http::client::http_client_config MakeConfig(std::chrono::seconds timeout) const;

  ClusterConfig config_;
  std::unique_ptr<web::http::client::http_client> client_;
  std::unique_ptr<web::http::client::http_client> watch_client_;
  pplx::cancellation_token_source cancel_;
  std::mutex token_mu_;
  std::string token_cache_;
  std::chrono::steady_clock::time_point token_read_{};
};

// URL path helpers: "/api/v1/namespaces/NS/configmaps/NAME" etc.
std::string ResourcePath(const std::string& api_version, const std::string& plural,
                         const std::string& ns, const std::string& name = "");
std::string UrlEncode(const std::string& s);

}  // namespace keep::kube
