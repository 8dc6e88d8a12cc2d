#include "dataplane/client/cluster_router.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace keep::client {

namespace bin = proto::binary;

namespace {

// What identifies a view for the majority count: its endpoints that serve slots, in a canonical
// order, with their ranges. Members coalesce ranges the same way, so equal maps give equal keys.
std::string SlotMapKey(const Topology& t) {
  std::vector<const Topology::ShardEndpoint*> serving;
  for (const auto& e : t.endpoints) {
    if (!e.slot_ranges.empty()) serving.push_back(&e);
  }
  std::sort(serving.begin(), serving.end(), [](const auto* a, const auto* b) {
    return std::tie(a->host, a->port) < std::tie(b->host, b->port);
  });
  std::string key;
  for (const auto* e : serving) {
    key.append(e->host).append(":").append(std::to_string(e->port)).append("=");
    for (auto [first, last] : e->slot_ranges) {
      key.append(std::to_string(first)).append("-").append(std::to_string(last)).append(",");
    }
    key.append(";");
  }
  return key;
}

}  // namespace

std::optional<size_t> ChooseMajorityView(const std::vector<Topology>& reports) {
  if (reports.empty()) return std::nullopt;
  bool all_fenced =
      std::all_of(reports.begin(), reports.end(), [](const Topology& t) { return t.fenced; });
  struct Group {
    size_t votes = 0;
    size_t best = 0;  // the report with the highest epoch among the group's
  };
  std::map<std::string, Group> groups;
  for (size_t i = 0; i < reports.size(); ++i) {
    if (reports[i].fenced && !all_fenced) continue;
    Group& g = groups[SlotMapKey(reports[i])];
    if (g.votes == 0 || reports[i].view_epoch > reports[g.best].view_epoch) g.best = i;
    ++g.votes;
  }
  const Group* chosen = nullptr;
  for (const auto& [key, g] : groups) {
    if (chosen == nullptr || g.votes > chosen->votes ||
        (g.votes == chosen->votes &&
         reports[g.best].view_epoch > reports[chosen->best].view_epoch)) {
      chosen = &g;
    }
  }
  return chosen->best;
}

ClusterRouter::ClusterRouter(std::vector<Endpoint> seeds)
    : seeds_(std::move(seeds)), slot_endpoint_(core::kSlotCount, -1) {}

void ClusterRouter::SetSlotFunction(std::optional<core::SlotFunction> slot_function) {
  slot_function_ = slot_function;
}

std::optional<uint16_t> ClusterRouter::SlotOf(std::string_view key) const {
  if (!slot_function_) return std::nullopt;
  return static_cast<uint16_t>((*slot_function_)(key));
}

Endpoint ClusterRouter::Route(std::string_view key) {
  if (auto slot = SlotOf(key)) {
    int32_t index = slot_endpoint_[*slot];
    if (index >= 0) return endpoints_[static_cast<size_t>(index)];
  } else if (has_view_ && !view_.cluster && view_.endpoints.size() == 1) {
    // A single node without shard ports: one endpoint serves everything.
    return Endpoint{view_.endpoints[0].host, view_.endpoints[0].port};
  }
  return Anywhere();
}

Endpoint ClusterRouter::Anywhere() {
  std::vector<Endpoint> members;
  if (has_view_) {
    for (const auto& m : view_.members) {
      if (m.state == bin::MemberState::kUp || m.state == bin::MemberState::kJoining) {
        members.push_back(Endpoint{m.host, m.client_port});
      }
    }
  }
  if (members.empty()) members = seeds_;
  if (members.empty()) return Endpoint{};
  return members[next_member_++ % members.size()];
}

void ClusterRouter::OnMoved(const bin::Moved& moved) {
  if (moved.slot >= core::kSlotCount) return;
  slot_endpoint_[moved.slot] = EndpointIndex(Endpoint{std::string(moved.host), moved.port});
}

int32_t ClusterRouter::EndpointIndex(const Endpoint& endpoint) {
  auto it = std::find(endpoints_.begin(), endpoints_.end(), endpoint);
  if (it != endpoints_.end()) return static_cast<int32_t>(it - endpoints_.begin());
  endpoints_.push_back(endpoint);
  return static_cast<int32_t>(endpoints_.size() - 1);
}

bool ClusterRouter::Adopt(const std::vector<Topology>& reports, bool* changed) {
  std::optional<size_t> chosen = ChooseMajorityView(reports);
  if (!chosen) return false;
  const Topology& t = reports[*chosen];
  // Endpoints are rebuilt from the view, so those of departed members do not accumulate.
  std::vector<Endpoint> endpoints;
  std::vector<int32_t> slots(core::kSlotCount, -1);
  for (const auto& e : t.endpoints) {
    if (e.slot_ranges.empty()) continue;
    endpoints.push_back(Endpoint{e.host, e.port});
    auto index = static_cast<int32_t>(endpoints.size() - 1);
    for (auto [first, last] : e.slot_ranges) {
      for (uint32_t s = first; s <= last && s < core::kSlotCount; ++s) slots[s] = index;
    }
  }
  bool differs = !has_view_ || endpoints != endpoints_ || slots != slot_endpoint_;
  if (changed != nullptr) *changed = differs;
  view_ = t;
  has_view_ = true;
  endpoints_ = std::move(endpoints);
  slot_endpoint_ = std::move(slots);
  return true;
}

std::vector<Endpoint> ClusterRouter::TopologySources() const {
  std::vector<Endpoint> sources;
  if (has_view_) {
    for (const auto& m : view_.members) {
      if (m.state == bin::MemberState::kLeft || m.client_port == 0) continue;
      Endpoint e{m.host, m.client_port};
      if (std::find(sources.begin(), sources.end(), e) == sources.end()) sources.push_back(e);
    }
  }
  for (const auto& seed : seeds_) {
    if (std::find(sources.begin(), sources.end(), seed) == sources.end()) sources.push_back(seed);
  }
  return sources;
}

}  // namespace keep::client
