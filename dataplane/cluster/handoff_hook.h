// Where a slot handoff engine plugs into the cluster (design §3.5). The control thread decides
// which slots move (ViewBuilder) and calls the engine; the engine moves the keys over the peer
// port and reports back with ClusterControl::FinishMove, which publishes the next view. Every
// call happens on the control thread.
#pragma once

#include <cstdint>

#include "dataplane/cluster/member_list.h"

namespace keep::cluster {

class HandoffHook {
 public:
  virtual ~HandoffHook() = default;
  // This member gains `slot` from `from` (alive) and answers TRYAGAIN for it until
  // FinishMove(slot).
  virtual void StartImport(uint32_t slot, const Member& from) = 0;
  // This member gives `slot` to `to` (alive) and answers TRYAGAIN for it until FinishMove(slot);
  // afterwards it answers MOVED.
  virtual void StartExport(uint32_t slot, const Member& to) = 0;
  // A move started earlier no longer applies (its peer died or placement changed again).
  virtual void Cancel(uint32_t slot) = 0;
};

}  // namespace keep::cluster
