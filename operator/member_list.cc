#include "operator/member_list.h"

#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace keep::op {

namespace {

std::string Hex(const unsigned char* data, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[data[i] >> 4]);
    out.push_back(kHex[data[i] & 15]);
  }
  return out;
}

}  // namespace

Json MemberList::ToJson() const {
  Json list = Json::array();
  for (const auto& m : members) {
    list.push_back({{"id", m.id},
                    {"host", m.host},
                    {"client_port", m.client_port},
                    {"peer_port", m.peer_port},
                    {"shards", m.shards}});
  }
  return {{"version", version}, {"members", list}};
}

std::optional<MemberList> MemberList::FromJson(const Json& j) {
  if (!j.is_object() || !j.contains("version") || !j["version"].is_number_integer() ||
      !j.contains("members") || !j["members"].is_array()) {
    return std::nullopt;
  }
  MemberList out;
  out.version = j["version"].get<int64_t>();
  for (const auto& m : j["members"]) {
    if (!m.is_object() || !m.contains("id") || !m["id"].is_string()) return std::nullopt;
    Member member;
    member.id = m["id"].get<std::string>();
    member.host = m.value("host", "");
    member.client_port = m.value("client_port", kClientPort);
    member.peer_port = m.value("peer_port", kPeerPort);
    member.shards = m.value("shards", 1);
    out.members.push_back(member);
  }
  return out;
}

Member MemberList::ForOrdinal(const ClusterSpec& spec, int ordinal) {
  return Member{spec.PodName(ordinal), spec.MemberHost(ordinal), kClientPort, kPeerPort,
                spec.shards};
}

MemberList MemberList::Initial(const ClusterSpec& spec) {
  MemberList list;
  list.version = 1;
  for (int i = 0; i < spec.members; ++i) list.members.push_back(ForOrdinal(spec, i));
  return list;
}

int MemberList::IndexOf(const std::string& id) const {
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

std::string AdminToken(const std::string& peer_secret) {
  static constexpr char kMessage[] = "keep-admin";
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), peer_secret.data(), static_cast<int>(peer_secret.size()),
       reinterpret_cast<const unsigned char*>(kMessage), sizeof(kMessage) - 1, mac, &len);
  return Hex(mac, len);
}

std::string RandomSecret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) throw std::runtime_error("RAND_bytes failed");
  return Hex(bytes, sizeof(bytes));
}

}  // namespace keep::op
