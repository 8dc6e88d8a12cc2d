// The member list (design §3.1): every member of a cluster has the same list of members (id,
// host, client port, peer port, shard count), given inline (`--members`), as a JSON file
// (`--members-file`) or at runtime by `PUT /v1/members`. It changes one member at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keep::cluster {

// Bounds that every parser checks before it builds anything.
inline constexpr size_t kMaxMembers = 1000;
inline constexpr size_t kMaxMemberIdLength = 64;
inline constexpr size_t kMaxHostLength = 253;
inline constexpr int kMaxShardsPerMember = 256;

struct Member {
  std::string id;
  std::string host;
  int client_port = 0;
  int peer_port = 0;
  int shards = 1;
  // Shard i of this member also listens on shard_port_base + i (design §2.3); 0 when it has no
  // shard ports, and then redirects name its client port.
  int shard_port_base = 0;

  // "host:port" of the endpoint that serves `slot` on this member.
  int PortForSlot(uint32_t slot) const {
    return shard_port_base > 0 ? shard_port_base + static_cast<int>(slot % shards) : client_port;
  }
  bool SameEndpoints(const Member& other) const {
    return host == other.host && client_port == other.client_port && peer_port == other.peer_port &&
           shards == other.shards && shard_port_base == other.shard_port_base;
  }
};

struct MemberList {
  uint64_t version = 0;
  std::vector<Member> members;

  // The index of `id`, or -1.
  int IndexOf(std::string_view id) const;
  // Votes needed for a majority of the list, the member itself included.
  size_t Majority() const { return members.size() / 2 + 1; }
};

// `id@host:client_port:peer_port:shards[:shard_port_base],...` (whitespace around entries is
// ignored). Returns an error message or "". Checks syntax and bounds only; see Validate.
std::string ParseInlineMembers(std::string_view text, MemberList* out);

// `{"version": N, "members": [{"id": ..., "host": ..., "client_port": ..., "peer_port": ...,
// "shards": ..., "shard_port_base": ...}, ...]}`; shards defaults to 1, shard_port_base to 0,
// version to 0. Unknown fields are refused so a typo is not silently ignored.
std::string ParseMembersJson(std::string_view text, MemberList* out);

std::string MembersToJson(const MemberList& list);

// A usable list: not empty, no id twice, no endpoint (host and client or peer port) twice.
// With `self_id` non-empty, that id must be in the list.
std::string ValidateMembers(const MemberList& list, std::string_view self_id);

// What `next` changes relative to `current`.
struct MemberChange {
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::vector<std::string> modified;  // same id, other endpoint or shard count
  bool empty() const { return added.empty() && removed.empty() && modified.empty(); }
};
MemberChange DiffMembers(const MemberList& current, const MemberList& next);

// Accepts `next` only if it adds or removes at most one member, changes no member in place,
// and does not go back in version; returns the reason otherwise.
std::string CheckOneChange(const MemberList& current, const MemberList& next);

}  // namespace keep::cluster
