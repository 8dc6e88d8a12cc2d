// Moving the keys of whole slots between stores (design §3.5): export in bounded batches from a
// resumable cursor, import on the other side, drop once the transfer is confirmed.
//
// The store has no per-slot index, so one walk of the table (Store::Scan) serves a whole set of
// slots: every key is hashed to its slot and kept when the slot is in the set. A handoff of many
// slots is therefore one pass per shard, not one per slot.
//
// Record layout (little-endian; the handoff protocol carries these bytes unchanged, see
// dataplane/cluster/handoff_protocol.md):
//
//   u8  kind      0 string, 1 integer, 2 lock
//   u16 slot      the key's slot (the importer checks it)
//   u32 key_len
//   i64 ttl_ms    remaining time to live, >= 1; -1 = no expiry
//   key_len bytes key
//   kind 0: u32 value_len, value bytes
//   kind 1: i64 value (the store keeps canonical decimal strings as integers)
//   kind 2: u64 fencing token, u32 owner_len, owner bytes
//
// Expiry travels as *remaining* time, never as a deadline: the machines' clocks differ. The
// exporter measures it against its turn's clock (which is never ahead of real time, so it can
// only overstate), and the importer adds it to a fresh reading of its own clock. A key written
// with TTL T at t0, exported at t1 and imported at t2 therefore expires at t0 + T + (t2 - t1):
// later by the transfer time, never earlier, so a key's PTTL on the receiver is always at least
// T - (now - t0) ("written minus elapsed").
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/core/slot.h"
#include "dataplane/core/slot_state.h"
#include "dataplane/core/store.h"

namespace keep::core {

enum class TransferKind : uint8_t { kString = 0, kInteger = 1, kLock = 2 };

// Fixed bytes of a record before its key (kind, slot, key_len, ttl).
inline constexpr size_t kTransferRecordHeader = 1 + 2 + 4 + 8;

// A set of slots; cheap to copy (2 KiB).
class SlotSet {
 public:
  void Add(uint32_t slot) { bits_.set(slot); }
  void Remove(uint32_t slot) { bits_.reset(slot); }
  bool Contains(uint32_t slot) const { return slot < kSlotCount && bits_.test(slot); }
  size_t Count() const { return bits_.count(); }
  bool Empty() const { return bits_.none(); }

 private:
  std::bitset<kSlotCount> bits_;
};

struct ExportCursor {
  uint64_t scan = 0;  // Store::Scan cursor
  bool done = false;  // the walk is complete
  // What the walk produced so far (it sizes the scan steps), and the entries examined before its
  // first record.
  size_t largest_record = 0;
  size_t bytes = 0;
  size_t records = 0;
  size_t probed = 0;
};

struct ExportLimits {
  // The call stops once it produced this many bytes. Each scan step takes the remaining budget
  // over the mean record size of the walk so far (but over at least 1/16 of its largest record;
  // one entry at a time until the first record), so with records of similar size a batch ends
  // within about one record of the budget. A step that meets records much larger than the mean
  // can overshoot by their excess (at worst 16 times the remaining budget); and when the table
  // split a segment mid-walk, by the rest of that segment. Smaller steps would make it exact but
  // cost a table-segment walk each (Store::Scan), which is what a shard turn must not pay for.
  size_t budget_bytes = 64 * 1024;
  // Entries the call may examine (matching or not), so a set of few keys in a large table does
  // not turn one call into a full walk.
  size_t max_visit = 16384;
};

struct TransferStats {
  size_t records = 0;
  size_t bytes = 0;
  size_t visited = 0;  // export/drop: entries examined
};

// Appends the records of live keys whose slot is in `slots` to *out, from `cursor`, and advances
// it. Call until cursor->done; a call may produce nothing (nothing matched in max_visit entries).
// Uses the store's current time (Store::SetNow) for expiry: expired keys are not exported.
// Keys inserted into the set's slots during the walk may be missed, which is why slots are in the
// exporting phase (Busy) while they move.
TransferStats ExportSlots(Store& store, const SlotFunction& slot_of, const SlotSet& slots,
                          ExportCursor* cursor, const ExportLimits& limits, std::string* out);

// The per-slot state that travels with a slot, measured at the exporter's `now_ms`.
struct SlotTransferState {
  uint64_t fencing_token = 0;
  int64_t quarantine_remaining_ms = 0;  // 0 when no quarantine
};
SlotTransferState ExportSlotState(const SlotTable& table, uint32_t slot, int64_t now_ms);
// Raises the counter to at least the sender's and extends the quarantine to at least its
// remaining time (re-based on `now_ms`): tokens stay monotonic across the move.
void ImportSlotState(SlotTable* table, uint32_t slot, const SlotTransferState& state,
                     int64_t now_ms);

enum class ImportError : uint8_t {
  kNone = 0,
  kTruncated,   // a record runs past the end of the batch
  kBadKind,     // unknown kind
  kBadTtl,      // ttl_ms neither -1 nor >= 1
  kWrongSlot,   // the slot field is not the key's slot
  kUnexpected,  // the key's slot is not in the set being imported
};
const char* ImportErrorName(ImportError error);

// Checks every record of `batch` first and applies nothing unless all are well-formed and belong
// to `slots`; then inserts each (replacing a key already present) with its deadline at
// now_ms + ttl_ms. `now_ms` must be a fresh reading of the importer's clock (not a turn start
// that may lag behind), so that a TTL never shrinks.
ImportError ImportRecords(Store& store, const SlotFunction& slot_of, const SlotSet& slots,
                          std::string_view batch, int64_t now_ms, TransferStats* stats);

// Splits a batch into per-shard parts by each record's slot (shard = slot mod shards), so a
// receiver with a different shard count imports each record on its own shard. False when a
// record is truncated or malformed (nothing else is checked here: ImportRecords does).
bool SplitTransferRecords(std::string_view batch, int shards, std::vector<std::string>* parts);

// Erases the keys whose slot is in `slots`, examining at most `max_visit` entries per call;
// call until cursor->done. Returns how many keys were erased.
size_t DropSlots(Store& store, const SlotFunction& slot_of, const SlotSet& slots,
                 ExportCursor* cursor, size_t max_visit);

// Encoding of one record, for tests and tools that build batches by hand.
void AppendTransferRecord(std::string* out, TransferKind kind, uint32_t slot, std::string_view key,
                          int64_t ttl_ms, std::string_view value, int64_t integer, uint64_t token);

}  // namespace keep::core
