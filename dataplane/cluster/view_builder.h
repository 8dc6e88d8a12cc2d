// Builds this member's views (design §3.3-3.5) from the member list, who is heard and what each
// member announces. It owns the per-slot handoff phases between views: a slot this member gains
// from a live member is *importing* and one it gives to a live member is *exporting* while a
// handoff engine moves it (FinishMove ends the phase); without a handoff engine, or when the
// former owner is dead, the slot changes hands at once and its locks are quarantined, because
// nothing carried the former owner's locks over.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/cluster/member_list.h"
#include "dataplane/cluster/view.h"

namespace keep::cluster {

// What the failure detector knows of one member of the list.
struct MemberStatus {
  bool alive = false;
  MemberState announced = MemberState::kJoining;  // its state in its last heartbeat
  uint64_t incarnation = 0;
  // It has been exporting slots to this member for a while (PeerTracker::SettleAwaitingPull).
  bool awaits_my_pull = false;
};

// A slot whose handoff starts or stops (for the handoff engine).
struct SlotMove {
  uint32_t slot = 0;
  std::string peer;  // the member it is pulled from (import) or handed to (export)
};
struct MoveEvents {
  std::vector<SlotMove> imports;
  std::vector<SlotMove> exports;
  std::vector<uint32_t> cancelled;  // moves that no longer apply (the view changed under them)
};

struct HandoffProgress {
  uint64_t in_flight = 0;
  uint64_t done = 0;
  uint64_t total = 0;
};

class ViewBuilder {
 public:
  struct Options {
    uint64_t placement_seed = 0;
    core::SlotHash slot_hash = core::SlotHash::kKeyed;
    // Lock quarantine of a slot gained without a handoff: max-lock-ttl + detection + margin.
    int64_t quarantine_ms = 0;
  };
  explicit ViewBuilder(Options options) : options_(options) {}

  struct Input {
    const MemberList* list = nullptr;
    int self = -1;
    MemberState self_state = MemberState::kJoining;
    uint64_t self_incarnation = 0;
    std::vector<MemberStatus> status;  // per member of the list; status[self] is ignored
    bool fenced = false;
    bool handoff = false;  // a handoff engine is attached (and may start moves now)
    int64_t now_ms = 0;    // CLOCK_MONOTONIC ms, for quarantine deadlines
    int64_t monotonic_raw_ms = 0;
  };

  // The next view, or nullptr when nothing a shard or a client sees would change.
  std::unique_ptr<View> Build(const Input& input, MoveEvents* events);

  // The handoff of `slot` completed: importing becomes owned, exporting not owned. Returns false
  // when the slot had no move in flight. Build must run afterwards to publish it.
  // `quarantine_until_ms` (CLOCK_MONOTONIC ms, 0 for none): a gained slot that opens empty
  // while a member that may have held it is dead gets the lock quarantine.
  bool FinishMove(uint32_t slot, int64_t quarantine_until_ms = 0);

  // Quarantines every slot this member owns now or gains later until now_ms + quarantine (a
  // previous life of this member may have granted locks that are still held).
  void QuarantineOwnSlotsUntil(int64_t until_ms) { boot_quarantine_until_ms_ = until_ms; }

  const HandoffProgress& progress() const { return progress_; }
  uint64_t epoch() const { return epoch_; }

 private:
  enum class Move : uint8_t { kNone, kImport, kExport };

  Options options_;
  uint64_t epoch_ = 0;
  bool have_previous_ = false;
  std::vector<std::string> previous_ids_;  // member ids of the previous view, by index
  std::array<uint16_t, core::kSlotCount> previous_owner_{};
  uint16_t previous_self_ = kNoOwner;  // this member's index in previous_ids_
  std::array<Move, core::kSlotCount> move_{};
  std::array<std::string, core::kSlotCount> move_peer_{};
  std::array<int64_t, core::kSlotCount> quarantine_{};
  int64_t boot_quarantine_until_ms_ = 0;
  // Members whose current "awaiting my pull" episode this member already answered (see Build).
  std::vector<std::string> reclaimed_from_;
  HandoffProgress progress_;
  std::unique_ptr<View> last_;  // a copy of the last view built, to detect no-op rebuilds
};

}  // namespace keep::cluster
