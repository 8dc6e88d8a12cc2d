// Per-slot state that is not a key: the fencing-token counter of the slot's locks and the lock
// quarantine after a crash (design §3.5). It belongs to the slot, so a handoff moves it with the
// slot's keys. Owned by the shard that owns the slot; never shared.
#pragma once

#include <array>
#include <cstdint>

#include "dataplane/core/slot.h"

namespace keep::core {

struct SlotState {
  // The last fencing token handed out by LOCK in this slot; tokens only grow.
  uint64_t fencing_token = 0;
  // LOCK is refused in this slot until then (shard clock, ms): the slot opened empty after its
  // owner crashed, and a lock that owner granted may still be held.
  int64_t lock_quarantine_until_ms = 0;
};

class SlotTable {
 public:
  SlotState& operator[](uint32_t slot) { return slots_[slot]; }
  const SlotState& operator[](uint32_t slot) const { return slots_[slot]; }

 private:
  std::array<SlotState, kSlotCount> slots_{};
};

}  // namespace keep::core
