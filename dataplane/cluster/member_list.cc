#include "dataplane/cluster/member_list.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace keep::cluster {

namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n'))
    text.remove_suffix(1);
  return text;
}

bool ParseInt(std::string_view text, int64_t* value) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string CheckId(std::string_view id) {
  if (id.empty()) return "a member id is empty";
  if (id.size() > kMaxMemberIdLength) {
    return "member id '" + std::string(id.substr(0, 80)) + "...' is longer than " +
           std::to_string(kMaxMemberIdLength) + " bytes";
  }
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok) return "member id '" + std::string(id) + "' may only hold letters, digits, '-_.'";
  }
  return "";
}

std::string CheckHost(std::string_view host, std::string_view id) {
  if (host.empty()) return "member '" + std::string(id) + "' has no host";
  if (host.size() > kMaxHostLength) return "member '" + std::string(id) + "' has a too long host";
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_';
    if (!ok)
      return "member '" + std::string(id) + "' has an invalid host '" + std::string(host) + "'";
  }
  return "";
}

std::string CheckNumbers(const Member& m) {
  auto port_ok = [](int port) { return port >= 1 && port <= 65535; };
  std::string who = "member '" + m.id + "'";
  if (!port_ok(m.client_port)) return who + ": client_port must be 1 to 65535";
  if (!port_ok(m.peer_port)) return who + ": peer_port must be 1 to 65535";
  if (m.client_port == m.peer_port) return who + ": client_port and peer_port are the same";
  if (m.shards < 1 || m.shards > kMaxShardsPerMember) {
    return who + ": shards must be 1 to " + std::to_string(kMaxShardsPerMember);
  }
  if (m.shard_port_base != 0 &&
      (m.shard_port_base < 1 || m.shard_port_base + m.shards - 1 > 65535)) {
    return who + ": shard_port_base must be 0 (none) or leave room for every shard below 65536";
  }
  return "";
}

}  // namespace

int MemberList::IndexOf(std::string_view id) const {
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

std::string ParseInlineMembers(std::string_view text, MemberList* out) {
  MemberList list;
  text = Trim(text);
  if (text.empty()) return "the member list is empty";
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view entry = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (entry.empty()) return "the member list has an empty entry";
    if (list.members.size() >= kMaxMembers) {
      return "the member list has more than " + std::to_string(kMaxMembers) + " members";
    }
    size_t at = entry.find('@');
    if (at == std::string_view::npos) {
      return "member entry '" + std::string(entry.substr(0, 100)) +
             "' is not id@host:client_port:peer_port:shards";
    }
    Member m;
    m.id = std::string(entry.substr(0, at));
    if (std::string error = CheckId(m.id); !error.empty()) return error;
    std::vector<std::string_view> fields;
    std::string_view rest = entry.substr(at + 1);
    while (fields.size() < 7) {
      size_t colon = rest.find(':');
      fields.push_back(rest.substr(0, colon));
      if (colon == std::string_view::npos) break;
      rest = rest.substr(colon + 1);
    }
    if (fields.size() < 4 || fields.size() > 5) {
      return "member '" + m.id + "' is not id@host:client_port:peer_port:shards[:shard_port_base]";
    }
    m.host = std::string(fields[0]);
    if (std::string error = CheckHost(m.host, m.id); !error.empty()) return error;
    int64_t numbers[4] = {0, 0, 0, 0};
    for (size_t i = 1; i < fields.size(); ++i) {
      if (!ParseInt(fields[i], &numbers[i - 1]) || numbers[i - 1] < 0 || numbers[i - 1] > 65535) {
        return "member '" + m.id + "' has an invalid number '" + std::string(fields[i]) + "'";
      }
    }
    m.client_port = static_cast<int>(numbers[0]);
    m.peer_port = static_cast<int>(numbers[1]);
    m.shards = static_cast<int>(numbers[2]);
    m.shard_port_base = static_cast<int>(numbers[3]);
    if (std::string error = CheckNumbers(m); !error.empty()) return error;
    list.members.push_back(std::move(m));
  }
  *out = std::move(list);
  return "";
}

std::string ParseMembersJson(std::string_view text, MemberList* out) {
  if (text.size() > 1024 * 1024) return "the member list is larger than 1 MiB";
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return "the member list is not valid JSON";
  if (!doc.is_object()) return "the member list must be a JSON object";
  MemberList list;
  for (auto& [key, value] : doc.items()) {
    if (key == "version") {
      if (!value.is_number_unsigned()) return "\"version\" must be a non-negative integer";
      list.version = value.get<uint64_t>();
    } else if (key != "members") {
      return "unknown field \"" + key.substr(0, 64) + "\" in the member list";
    }
  }
  auto members = doc.find("members");
  if (members == doc.end() || !members->is_array()) return "\"members\" must be an array";
  if (members->size() > kMaxMembers) {
    return "the member list has more than " + std::to_string(kMaxMembers) + " members";
  }
  for (const auto& item : *members) {
    if (!item.is_object()) return "every member must be a JSON object";
    Member m;
    auto get_int = [&](const char* name, int* field, bool required) -> std::string {
      auto it = item.find(name);
      if (it == item.end()) return required ? std::string("a member has no \"") + name + "\"" : "";
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 65535) {
        return std::string("\"") + name + "\" must be an integer from 0 to 65535";
      }
      *field = it->get<int>();
      return "";
    };
    for (auto& [key, value] : item.items()) {
      if (key != "id" && key != "host" && key != "client_port" && key != "peer_port" &&
          key != "shards" && key != "shard_port_base") {
        return "unknown field \"" + key.substr(0, 64) + "\" in a member";
      }
    }
    auto id = item.find("id");
    if (id == item.end() || !id->is_string()) return "every member needs a string \"id\"";
    m.id = id->get<std::string>();
    if (std::string error = CheckId(m.id); !error.empty()) return error;
    auto host = item.find("host");
    if (host == item.end() || !host->is_string())
      return "member '" + m.id + "' needs a string \"host\"";
    m.host = host->get<std::string>();
    if (std::string error = CheckHost(m.host, m.id); !error.empty()) return error;
    for (auto [name, field, required] : {std::tuple{"client_port", &m.client_port, true},
                                         {"peer_port", &m.peer_port, true},
                                         {"shards", &m.shards, false},
                                         {"shard_port_base", &m.shard_port_base, false}}) {
      if (std::string error = get_int(name, field, required); !error.empty()) {
        return "member '" + m.id + "': " + error;
      }
    }
    if (std::string error = CheckNumbers(m); !error.empty()) return error;
    list.members.push_back(std::move(m));
  }
  *out = std::move(list);
  return "";
}

std::string MembersToJson(const MemberList& list) {
  nlohmann::json members = nlohmann::json::array();
  for (const Member& m : list.members) {
    members.push_back({{"id", m.id},
                       {"host", m.host},
                       {"client_port", m.client_port},
                       {"peer_port", m.peer_port},
                       {"shards", m.shards},
                       {"shard_port_base", m.shard_port_base}});
  }
  return nlohmann::json{{"version", list.version}, {"members", members}}.dump();
}

std::string ValidateMembers(const MemberList& list, std::string_view self_id) {
  if (list.members.empty()) return "the member list is empty";
  std::set<std::string_view> ids;
  std::set<std::pair<std::string_view, int>> endpoints;
  for (const Member& m : list.members) {
    if (!ids.insert(m.id).second) return "member id '" + m.id + "' appears twice";
    for (int port : {m.client_port, m.peer_port}) {
      if (!endpoints.insert({m.host, port}).second) {
        return "endpoint " + m.host + ":" + std::to_string(port) + " (member '" + m.id +
               "') is used twice";
      }
    }
  }
  if (!self_id.empty() && ids.count(self_id) == 0) {
    return "this member's id '" + std::string(self_id) + "' is not in the member list";
  }
  return "";
}

MemberChange DiffMembers(const MemberList& current, const MemberList& next) {
  MemberChange change;
  for (const Member& m : next.members) {
    int i = current.IndexOf(m.id);
    if (i < 0) {
      change.added.push_back(m.id);
    } else if (!current.members[i].SameEndpoints(m)) {
      change.modified.push_back(m.id);
    }
  }
  for (const Member& m : current.members) {
    if (next.IndexOf(m.id) < 0) change.removed.push_back(m.id);
  }
  return change;
}

std::string CheckOneChange(const MemberList& current, const MemberList& next) {
  if (next.version < current.version) {
    return "member list version " + std::to_string(next.version) + " is older than the current " +
           std::to_string(current.version);
  }
  MemberChange change = DiffMembers(current, next);
  if (!change.modified.empty()) {
    return "member '" + change.modified[0] +
           "' changes its endpoint or shard count: remove it, then add it again";
  }
  size_t moves = change.added.size() + change.removed.size();
  if (moves > 1) {
    return "the member list changes " + std::to_string(moves) + " members at once (added " +
           std::to_string(change.added.size()) + ", removed " +
           std::to_string(change.removed.size()) + "): change one member at a time";
  }
  return "";
}

}  // namespace keep::cluster
