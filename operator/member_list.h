// The cluster's member list (design §3.1) as the members file and `PUT /v1/members` carry it:
// {"version": N, "members": [{"id", "host", "client_port", "peer_port", "shards"}]}; and the
// admin token the members accept: hex(HMAC-SHA256(peer secret, "keep-admin")).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "operator/cluster_spec.h"

namespace keep::op {

struct Member {
  std::string id;
  std::string host;
  int client_port = kClientPort;
  int peer_port = kPeerPort;
  int shards = 1;
  bool operator==(const Member&) const = default;
};

struct MemberList {
  int64_t version = 0;
  std::vector<Member> members;

  Json ToJson() const;
  static std::optional<MemberList> FromJson(const Json& j);
  // Member i of the cluster (NAME-i at its headless-service DNS name).
  static Member ForOrdinal(const ClusterSpec& spec, int ordinal);
  // The initial list: members 0..spec.members-1, version 1.
  static MemberList Initial(const ClusterSpec& spec);
  int IndexOf(const std::string& id) const;
};

std::string AdminToken(const std::string& peer_secret);
// 32 random bytes, hex.
std::string RandomSecret();

}  // namespace keep::op
