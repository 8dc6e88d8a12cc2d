#include "operator/member_admin.h"

#include <cpprest/http_client.h>

#include "operator/cluster_spec.h"

namespace keep::op {

namespace {

AdminReply Call(const std::string& ip, const std::string& method, const std::string& path,
                const std::optional<nlohmann::json>& body, const std::string& token) {
  AdminReply out;
  try {
    web::http::client::http_client_config cfg;
    cfg.set_timeout(std::chrono::seconds(2));
    std::string host = ip.find(':') != std::string::npos ? "[" + ip + "]" : ip;
    web::http::client::http_client client("http://" + host + ":" + std::to_string(kAdminPort), cfg);
    web::http::http_request req(method);
    req.set_request_uri(path);
    if (!token.empty()) req.headers().add("Authorization", "Bearer " + token);
    if (body) req.set_body(body->dump(), "application/json");
    auto resp = client.request(req).get();
    out.status = resp.status_code();
    std::string text = resp.extract_utf8string(true).get();
    out.body = nlohmann::json::parse(text, nullptr, false);
    if (out.body.is_discarded()) out.body = nlohmann::json();
  } catch (const std::exception&) {
    out.status = 0;
  }
  return out;
}

}  // namespace

AdminReply HttpMemberAdmin::GetCluster(const std::string& ip) {
  return Call(ip, "GET", "/v1/cluster", std::nullopt, "");
}

AdminReply HttpMemberAdmin::PutMembers(const std::string& ip, const nlohmann::json& list,
                                       const std::string& token) {
  return Call(ip, "PUT", "/v1/members", list, token);
}

AdminReply HttpMemberAdmin::Leave(const std::string& ip, const std::string& token) {
  return Call(ip, "POST", "/v1/leave", std::nullopt, token);
}

}  // namespace keep::op
