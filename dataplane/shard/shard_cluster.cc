// The shard's side of the cluster (design §2.1, §3): each turn it reads the current view once
// (Shard::Turn), and before a keyed request runs it checks that this member serves the slot.
// The check is a table lookup; only refused requests build a reply text.
#include <algorithm>

#include "dataplane/shard/shard.h"
#include "dataplane/shard/shard_group.h"

namespace keep::shard {

bool Shard::ClusterAdmits(Connection* conn) {
  const cluster::View& view = *view_;
  uint32_t slot = 0;
  switch (plan_.routing) {
    case commands::Routing::kSingleKey:
      slot = plan_.slot;
      break;
    case commands::Routing::kEachKey: {
      if (plan_.key_slot.empty()) return true;
      slot = plan_.key_slot[0];
      bool one_slot = true;
      bool all_served = !view.fenced;
      for (uint32_t s : plan_.key_slot) {
        one_slot = one_slot && s == slot;
        all_served = all_served && view.phase[s] == cluster::SlotPhase::kOwned;
      }
      // Keys of several slots are fine as long as this member serves them all; otherwise the
      // client must split the request as for Redis Cluster.
      if (all_served) return true;
      if (!one_slot && !view.fenced) {
        proto::ReplyWriter(ReplyTarget(conn), conn->client.resp_version)
            .Error(commands::errors::kCrossSlot);
        return false;
      }
      break;
    }
    default:
      return true;
  }
  cluster::SlotRoute route = cluster::RouteSlot(view, slot);
  if (route == cluster::SlotRoute::kServe) return true;
  cluster::RouteError(view, slot, route, &route_error_);
  if (conn->binary != nullptr) conn->binary->route_refused = true;
  metrics_.RecordRedirect(route == cluster::SlotRoute::kMoved ? telemetry::Redirect::kMoved
                          : route == cluster::SlotRoute::kTryAgain
                              ? telemetry::Redirect::kTryAgain
                              : telemetry::Redirect::kClusterDown);
  proto::ReplyWriter(ReplyTarget(conn), conn->client.resp_version).Error(route_error_);
  return false;
}

void Shard::ApplyView() {
  applied_epoch_ = view_->epoch;
  for (uint32_t slot = static_cast<uint32_t>(options_.index); slot < core::kSlotCount;
       slot += static_cast<uint32_t>(options_.count)) {
    int64_t deadline = view_->lock_quarantine_until_ms[slot];
    if (deadline == 0) continue;
    int64_t& until = slot_table_[slot].lock_quarantine_until_ms;
    until = std::max(until, deadline + clock_.offset_ms());
  }
}

}  // namespace keep::shard
