// Calls to a member's admin HTTP endpoint (design §4): GET /v1/cluster, PUT /v1/members,
// POST /v1/leave. An interface so the reconciler can be driven by a fake.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace keep::op {

struct AdminReply {
  int status = 0;  // 0: no answer (refused, timed out, not HTTP)
  nlohmann::json body;
};

class MemberAdmin {
 public:
  virtual ~MemberAdmin() = default;
  virtual AdminReply GetCluster(const std::string& ip) = 0;
  virtual AdminReply PutMembers(const std::string& ip, const nlohmann::json& list,
                                const std::string& token) = 0;
  virtual AdminReply Leave(const std::string& ip, const std::string& token) = 0;
};

// Plain HTTP to IP:7002 with short timeouts.
class HttpMemberAdmin : public MemberAdmin {
 public:
  AdminReply GetCluster(const std::string& ip) override;
  AdminReply PutMembers(const std::string& ip, const nlohmann::json& list,
                        const std::string& token) override;
  AdminReply Leave(const std::string& ip, const std::string& token) override;
};

}  // namespace keep::op
