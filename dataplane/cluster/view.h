// A view (design §3.3): what one member believes about the cluster at one moment: the members
// and their states, the owner of every slot, this member's phase for every slot (serving, gone,
// or in a handoff), the per-slot lock quarantine, and whether this member is fenced. Views are
// immutable once published: the control thread builds a new one for every change and publishes
// it through ViewPublisher; shards load the current one once per turn.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/cluster/member_list.h"
#include "dataplane/cluster/placement.h"
#include "dataplane/core/slot.h"

namespace keep::cluster {

// A member's lifecycle as it announces it (and kDown when it is not heard).
enum class MemberState : uint8_t { kJoining = 0, kUp = 1, kLeaving = 2, kLeft = 3, kDown = 4 };
std::string_view MemberStateName(MemberState state);

// This member's relation to one slot.
enum class SlotPhase : uint8_t {
  kNotOwned = 0,   // another member owns it: MOVED
  kOwned = 1,      // served here
  kImporting = 2,  // this member gains it and is pulling its keys: TRYAGAIN until done
  kExporting = 3,  // this member hands it over: TRYAGAIN until the new owner holds it
};
std::string_view SlotPhaseName(SlotPhase phase);

struct ViewMember;
// Fills `endpoints` and `node_ids` of `vm` from its member entry.
void FillEndpoints(ViewMember* vm);

struct ViewMember {
  Member member;
  MemberState state = MemberState::kDown;
  uint64_t incarnation = 0;  // 0 when never heard
  uint32_t slots_owned = 0;  // slots whose owner is this member in this view
  // "host:port" per shard (its shard port) or one entry (the client port) without shard ports.
  std::vector<std::string> endpoints;
  // A Redis-style 40-hex node id per endpoint, stable for (member id, endpoint index), for
  // CLUSTER NODES/SLOTS/SHARDS/MYID.
  std::vector<std::string> node_ids;

  // The endpoint serving `slot` on this member (its index in `endpoints`).
  size_t EndpointIndex(uint32_t slot) const {
    return endpoints.size() == 1 ? 0 : slot % endpoints.size();
  }
  const std::string& EndpointForSlot(uint32_t slot) const {
    return endpoints[endpoints.size() == 1 ? 0 : slot % endpoints.size()];
  }
};

struct View {
  uint64_t epoch = 0;
  bool fenced = false;
  int self = -1;  // index of this member in `members`
  core::SlotHash slot_hash = core::SlotHash::kKeyed;
  std::vector<ViewMember> members;
  std::array<uint16_t, core::kSlotCount> owner{};  // index into members, or kNoOwner
  std::array<SlotPhase, core::kSlotCount> phase{};
  // LOCK answers TRYAGAIN in the slot until then (CLOCK_MONOTONIC ms, core::MonotonicNanos; a
  // shard adds its clock's offset, so no wall-clock step moves the deadline); 0: none.
  std::array<int64_t, core::kSlotCount> lock_quarantine_until_ms{};
  // When the view was built (CLOCK_MONOTONIC_RAW, ms), so tests and operators can time changes.
  int64_t built_monotonic_raw_ms = 0;
};

// Redis's texts.
inline constexpr std::string_view kClusterDownError = "CLUSTERDOWN The cluster is down";
inline constexpr std::string_view kTryAgainError =
    "TRYAGAIN Multiple keys request during rehashing of slot";

enum class SlotRoute : uint8_t { kServe, kFenced, kMoved, kTryAgain };

// The hot-path decision for a keyed request: one load and a switch.
inline SlotRoute RouteSlot(const View& view, uint32_t slot) {
  if (view.fenced) return SlotRoute::kFenced;
  switch (view.phase[slot]) {
    case SlotPhase::kOwned:
      return SlotRoute::kServe;
    case SlotPhase::kNotOwned:
      return view.owner[slot] == kNoOwner ? SlotRoute::kFenced : SlotRoute::kMoved;
    default:
      return SlotRoute::kTryAgain;
  }
}

// Writes the error text (without '-') for a request on `slot` routed `route` (not kServe) into
// `out`, replacing its contents; reuses its capacity, so the reply path does not allocate.
void RouteError(const View& view, uint32_t slot, SlotRoute route, std::string* out);

// Publication with epoch-based reclamation (design §2.1). One writer (the control thread), a
// fixed number of readers (the shards). A reader calls BeginTurn at the start of each turn and
// may use the returned view until its next BeginTurn. A retired view is freed once every reader
// has begun a turn after the view was replaced.
class ViewPublisher {
 public:
  explicit ViewPublisher(int readers);
  ~ViewPublisher();
  ViewPublisher(const ViewPublisher&) = delete;
  ViewPublisher& operator=(const ViewPublisher&) = delete;

  // Reader `reader`: the current view (nullptr before the first Publish).
  const View* BeginTurn(int reader) {
    turns_[reader].value.fetch_add(1, std::memory_order_seq_cst);
    return current_.load(std::memory_order_seq_cst);
  }

  // Writer only.
  void Publish(std::unique_ptr<View> view);
  const View* current() const { return current_.load(std::memory_order_relaxed); }
  // Frees the retired views no reader can still hold; returns how many remain.
  size_t Reclaim();

 private:
  struct alignas(64) Turn {
    std::atomic<uint64_t> value{0};
  };
  struct Retired {
    const View* view;
    std::vector<uint64_t> turns;  // every reader's turn when it was replaced
  };
  std::atomic<const View*> current_{nullptr};
  std::unique_ptr<Turn[]> turns_;
  int readers_;
  std::vector<Retired> retired_;
};

}  // namespace keep::cluster
