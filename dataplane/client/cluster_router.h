// The slot map a cluster-aware libkeep client routes by (design §3.6): which shard endpoint
// serves each of the 16,384 slots, taken from the view most members report over TOPOLOGY and
// patched by MOVED between refreshes. Pure bookkeeping, no I/O: ClusterClient
// (cluster_client.h) fetches the views and sends the requests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/client/keep_client.h"
#include "dataplane/core/slot.h"

namespace keep::client {

// Index into `reports` of the view to follow: the one reported by the most members (two
// reports are the same view when they send every slot to the same endpoints; epochs are per
// member and cannot be compared across members), ties to the highest epoch. Fenced members'
// reports count only when every report is fenced. nullopt when `reports` is empty.
std::optional<size_t> ChooseMajorityView(const std::vector<Topology>& reports);

class ClusterRouter : public Router {
 public:
  explicit ClusterRouter(std::vector<Endpoint> seeds);

  // How keys map to slots; nullopt when the client cannot place keys (keyed slots without the
  // cluster secret): Route then sends keys to the members in turn and MOVED takes them on.
  void SetSlotFunction(std::optional<core::SlotFunction> slot_function);
  bool places_keys() const { return slot_function_.has_value(); }
  std::optional<uint16_t> SlotOf(std::string_view key) const;

  // The endpoint serving `key`'s slot; a member's client port when the slot is unknown.
  Endpoint Route(std::string_view key) override;
  // A keyless request's endpoint: the members' client ports in turn.
  Endpoint Anywhere();
  // The slot is served at the endpoint MOVED names until the next view says otherwise.
  void OnMoved(const proto::binary::Moved& moved) override;

  // Follows ChooseMajorityView(reports); false (and nothing changes) when there is none.
  // *changed says whether the slot map differs from the one followed before.
  bool Adopt(const std::vector<Topology>& reports, bool* changed = nullptr);
  bool has_view() const { return has_view_; }
  const Topology& view() const { return view_; }

  // Where to ask for TOPOLOGY: every member's client port in the view (those that left
  // excepted), then the seeds not among them.
  std::vector<Endpoint> TopologySources() const;

 private:
  int32_t EndpointIndex(const Endpoint& endpoint);

  std::vector<Endpoint> seeds_;
  std::optional<core::SlotFunction> slot_function_;
  bool has_view_ = false;
  Topology view_;
  std::vector<Endpoint> endpoints_;
  std::vector<int32_t> slot_endpoint_;  // per slot: index into endpoints_, -1 when unlisted
  size_t next_member_ = 0;
};

}  // namespace keep::client
