#include "operator/kube/client.h"

#include <cpprest/containerstream.h>
#include <cpprest/rawptrstream.h>
#include <boost/asio/ssl.hpp>

namespace keep::kube {

namespace http = web::http;

std::string UrlEncode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string ResourcePath(const std::string& api_version, const std::string& plural,
                         const std::string& ns, const std::string& name) {
  std::string path =
      api_version.find('/') == std::string::npos ? "/api/" + api_version : "/apis/" + api_version;
  if (!ns.empty()) path += "/namespaces/" + ns;
  path += "/" + plural;
  if (!name.empty()) path += "/" + name;
  return path;
}

http::client::http_client_config Client::MakeConfig(std::chrono::seconds timeout) const {
  http::client::http_client_config cfg;
  cfg.set_timeout(timeout);
  cfg.set_validate_certificates(!config_.insecure_skip_verify);
  std::string ca = config_.ca_pem, cert = config_.client_cert_pem, key = config_.client_key_pem;
  cfg.set_ssl_context_callback([ca, cert, key](boost::asio::ssl::context& ctx) {
    if (!ca.empty()) ctx.add_certificate_authority(boost::asio::buffer(ca.data(), ca.size()));
    if (!cert.empty()) {
      ctx.use_certificate_chain(boost::asio::buffer(cert.data(), cert.size()));
      ctx.use_private_key(boost::asio::buffer(key.data(), key.size()),
                          boost::asio::ssl::context::pem);
    }
  });
  return cfg;
}

Client::Client(ClusterConfig config, std::chrono::seconds timeout) : config_(std::move(config)) {
  client_ = std::make_unique<http::client::http_client>(config_.server, MakeConfig(timeout));
  // A watch carries a server-side timeoutSeconds (at most 600 s); the client gives up only
  // well after that, and the timer restarts on every chunk read.
  watch_client_ = std::make_unique<http::client::http_client>(
      config_.server, MakeConfig(std::chrono::seconds(660)));
}

Client::~Client() { Cancel(); }

void Client::Cancel() { cancel_.cancel(); }

std::string Client::BearerToken() {
  if (config_.token_file.empty()) return config_.token;
  std::lock_guard lock(token_mu_);
  auto now = std::chrono::steady_clock::now();
  if (token_cache_.empty() || now - token_read_ > std::chrono::seconds(10)) {
    if (auto t = ReadFile(config_.token_file)) {
      token_cache_ = *t;
      while (!token_cache_.empty() && isspace(static_cast<unsigned char>(token_cache_.back()))) {
        token_cache_.pop_back();
      }
    }
    token_read_ = now;
  }
  return token_cache_;
}

namespace {

Json ParseBody(const std::string& text) {
  if (text.empty()) return Json();
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

Response Client::Request(const std::string& method, const std::string& path,
                         const std::optional<Json>& body, const std::string& content_type) {
  Response out;
  try {
    http::http_request req(method);
    req.set_request_uri(path);
    req.headers().add("Accept", "application/json");
    req.headers().add("User-Agent", "keep-operator");
    if (std::string token = BearerToken(); !token.empty()) {
      req.headers().add("Authorization", "Bearer " + token);
    }
    if (body) req.set_body(body->dump(), content_type);
    http::http_response resp = client_->request(req, cancel_.get_token()).get();
    out.status = resp.status_code();
    std::string text = resp.extract_utf8string(true).get();
    out.body = ParseBody(text);
    // Callers read fields with value(): anything but a JSON object reads as an empty one.
    if (!out.body.is_object()) out.body = Json::object();
    if (resp.headers().has("Retry-After")) {
      out.retry_after_seconds = atoi(resp.headers()["Retry-After"].c_str());
    }
    if (!out.ok()) {
      out.error = out.body.is_object() && out.body.contains("message")
                      ? out.body["message"].get<std::string>()
                      : text.substr(0, 200);
    }
  } catch (const std::exception& e) {
    out.status = 0;
    out.error = e.what();
  }
  return out;
}

Response Client::Apply(const std::string& path, const Json& object,
                       const std::string& field_manager) {
  return Request("PATCH", path + "?fieldManager=" + UrlEncode(field_manager) + "&force=true",
                 object, "application/apply-patch+yaml");
}

WatchEnd Client::Watch(const std::string& path, const std::function<bool(const Json&)>& on_event) {
  WatchEnd end;
  try {
    http::http_request req("GET");
    req.set_request_uri(path);
    req.headers().add("Accept", "application/json");
    req.headers().add("User-Agent", "keep-operator");
    if (std::string token = BearerToken(); !token.empty()) {
      req.headers().add("Authorization", "Bearer " + token);
    }
    http::http_response resp = watch_client_->request(req, cancel_.get_token()).get();
    end.status = resp.status_code();
    if (end.status != 200) {
      end.error = resp.extract_utf8string(true).get().substr(0, 200);
      return end;
    }
    auto stream = resp.body();
    while (true) {
      concurrency::streams::container_buffer<std::string> line;
      size_t n = stream.read_line(line).get();
      if (n == 0 && stream.is_eof()) break;
      if (line.collection().empty()) continue;
      Json event = Json::parse(line.collection(), nullptr, false);
      if (event.is_discarded()) {
        end.error = "watch: bad JSON line";
        break;
      }
      if (!on_event(event)) break;
    }
  } catch (const std::exception& e) {
    end.error = e.what();
  }
  return end;
}

}  // namespace keep::kube
