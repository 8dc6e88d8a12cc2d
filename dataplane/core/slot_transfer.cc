#include "dataplane/core/slot_transfer.h"

#include <algorithm>
#include <cstring>

#include "dataplane/core/byte_io.h"
#include "dataplane/core/record.h"

namespace keep::core {

namespace {

// A lock's value in the store: the fencing token (8 bytes, host order), then the owner
// (commands/lock_family.cc writes it).
constexpr size_t kLockTokenBytes = sizeof(uint64_t);

void AppendFromStore(Store& store, Store::Ref ref, uint32_t slot, std::string_view key,
                     std::string* out) {
  const int64_t deadline = store.ExpireAt(ref);
  const int64_t ttl = deadline == kNoExpiry ? -1 : std::max<int64_t>(1, deadline - store.now());
  int64_t integer = 0;
  if (store.Type(ref) == ValueType::kLock) {
    std::string_view value = store.Value(ref);
    uint64_t token = 0;
    if (value.size() >= kLockTokenBytes) {
      std::memcpy(&token, value.data(), kLockTokenBytes);
      value.remove_prefix(kLockTokenBytes);
    }
    AppendTransferRecord(out, TransferKind::kLock, slot, key, ttl, value, 0, token);
  } else if (store.IntegerValue(ref, &integer)) {
    AppendTransferRecord(out, TransferKind::kInteger, slot, key, ttl, {}, integer, 0);
  } else {
    AppendTransferRecord(out, TransferKind::kString, slot, key, ttl, store.Value(ref), 0, 0);
  }
}

struct ParsedRecord {
  TransferKind kind = TransferKind::kString;
  uint16_t slot = 0;
  int64_t ttl_ms = -1;
  std::string_view key;
  std::string_view value;  // string value or lock owner
  int64_t integer = 0;
  uint64_t token = 0;
};

ImportError ParseRecord(ByteReader* in, ParsedRecord* r) {
  uint8_t kind;
  uint32_t key_len;
  if (!in->GetU8(&kind) || !in->GetU16(&r->slot) || !in->GetU32(&key_len) ||
      !in->GetI64(&r->ttl_ms) || !in->GetBytes(key_len, &r->key)) {
    return ImportError::kTruncated;
  }
  if (kind > static_cast<uint8_t>(TransferKind::kLock)) return ImportError::kBadKind;
  r->kind = static_cast<TransferKind>(kind);
  if (r->ttl_ms != -1 && r->ttl_ms < 1) return ImportError::kBadTtl;
  uint32_t len = 0;
  switch (r->kind) {
    case TransferKind::kString:
      if (!in->GetU32(&len) || !in->GetBytes(len, &r->value)) return ImportError::kTruncated;
      break;
    case TransferKind::kInteger:
      if (!in->GetI64(&r->integer)) return ImportError::kTruncated;
      break;
    case TransferKind::kLock:
      if (!in->GetU64(&r->token) || !in->GetU32(&len) || !in->GetBytes(len, &r->value)) {
        return ImportError::kTruncated;
      }
      break;
  }
  return ImportError::kNone;
}

}  // namespace

void AppendTransferRecord(std::string* out, TransferKind kind, uint32_t slot, std::string_view key,
                          int64_t ttl_ms, std::string_view value, int64_t integer, uint64_t token) {
  PutU8(out, static_cast<uint8_t>(kind));
  PutU16(out, static_cast<uint16_t>(slot));
  PutU32(out, static_cast<uint32_t>(key.size()));
  PutI64(out, ttl_ms);
  out->append(key);
  switch (kind) {
    case TransferKind::kString:
      PutU32(out, static_cast<uint32_t>(value.size()));
      out->append(value);
      break;
    case TransferKind::kInteger:
      PutI64(out, integer);
      break;
    case TransferKind::kLock:
      PutU64(out, token);
      PutU32(out, static_cast<uint32_t>(value.size()));
      out->append(value);
      break;
  }
}

TransferStats ExportSlots(Store& store, const SlotFunction& slot_of, const SlotSet& slots,
                          ExportCursor* cursor, const ExportLimits& limits, std::string* out) {
  TransferStats stats;
  const size_t start = out->size();
  const size_t budget = std::max<size_t>(limits.budget_bytes, 1);
  const size_t max_visit = std::max<size_t>(limits.max_visit, 1);
  // Until the walk produced its first record, sizes are unknown: probe one entry per step for a
  // while, then grow the step.
  constexpr size_t kProbeEntries = 64;
  size_t step_cap = 1;
  auto visit = [&](std::string_view key, Store::Ref ref) {
    ++stats.visited;
    const uint32_t slot = slot_of(key);
    if (!slots.Contains(slot)) return;
    const size_t before = out->size();
    AppendFromStore(store, ref, slot, key, out);
    cursor->largest_record = std::max(cursor->largest_record, out->size() - before);
    cursor->bytes += out->size() - before;
    ++cursor->records;
    ++stats.records;
  };
  while (!cursor->done) {
    const size_t produced = out->size() - start;
    if (produced >= budget || stats.visited >= max_visit) break;
    size_t step;
    if (cursor->largest_record == 0) {
      step = cursor->probed < kProbeEntries ? 1 : step_cap;
      step_cap = std::min<size_t>(step_cap * 2, 1024);
    } else {
      const size_t mean = cursor->bytes / cursor->records;
      step = (budget - produced) / std::max<size_t>({mean, cursor->largest_record / 16, 1});
    }
    step = std::clamp<size_t>(step, 1, max_visit - stats.visited);
    const size_t visited_before = stats.visited;
    cursor->scan = store.Scan(cursor->scan, step, visit);
    if (cursor->largest_record == 0) cursor->probed += stats.visited - visited_before;
    if (cursor->scan == 0) cursor->done = true;
  }
  stats.bytes = out->size() - start;
  return stats;
}

SlotTransferState ExportSlotState(const SlotTable& table, uint32_t slot, int64_t now_ms) {
  const SlotState& state = table[slot];
  SlotTransferState out;
  out.fencing_token = state.fencing_token;
  out.quarantine_remaining_ms = std::max<int64_t>(0, state.lock_quarantine_until_ms - now_ms);
  return out;
}

void ImportSlotState(SlotTable* table, uint32_t slot, const SlotTransferState& state,
                     int64_t now_ms) {
  SlotState& own = (*table)[slot];
  own.fencing_token = std::max(own.fencing_token, state.fencing_token);
  if (state.quarantine_remaining_ms > 0) {
    own.lock_quarantine_until_ms =
        std::max(own.lock_quarantine_until_ms, now_ms + state.quarantine_remaining_ms);
  }
}

const char* ImportErrorName(ImportError error) {
  switch (error) {
    case ImportError::kNone:
      return "none";
    case ImportError::kTruncated:
      return "truncated record";
    case ImportError::kBadKind:
      return "unknown record kind";
    case ImportError::kBadTtl:
      return "invalid ttl";
    case ImportError::kWrongSlot:
      return "record slot does not match its key";
    case ImportError::kUnexpected:
      return "record of a slot not being imported";
  }
  return "unknown";
}

ImportError ImportRecords(Store& store, const SlotFunction& slot_of, const SlotSet& slots,
                          std::string_view batch, int64_t now_ms, TransferStats* stats) {
  // Check everything first: a bad batch must leave the store as it was.
  {
    ByteReader in(batch);
    ParsedRecord r;
    while (in.remaining() > 0) {
      if (ImportError e = ParseRecord(&in, &r); e != ImportError::kNone) return e;
      if (slot_of(r.key) != r.slot) return ImportError::kWrongSlot;
      if (!slots.Contains(r.slot)) return ImportError::kUnexpected;
    }
  }
  ByteReader in(batch);
  ParsedRecord r;
  std::string lock_value;
  char digits[24];
  size_t records = 0;
  while (in.remaining() > 0) {
    ParseRecord(&in, &r);
    if (Store::Ref old = store.Find(r.key)) store.Erase(old);
    Store::Ref ref = nullptr;
    switch (r.kind) {
      case TransferKind::kString:
        ref = store.Insert(r.key, r.value);
        break;
      case TransferKind::kInteger:
        ref = store.Insert(r.key, {digits, record::FormatInteger(r.integer, digits)});
        break;
      case TransferKind::kLock:
        lock_value.resize(kLockTokenBytes);
        std::memcpy(lock_value.data(), &r.token, kLockTokenBytes);
        lock_value.append(r.value);
        ref = store.Insert(r.key, lock_value, ValueType::kLock);
        break;
    }
    if (r.ttl_ms > 0) store.SetExpireAt(ref, now_ms + r.ttl_ms);
    ++records;
  }
  if (stats != nullptr) {
    stats->records += records;
    stats->bytes += batch.size();
  }
  return ImportError::kNone;
}

bool SplitTransferRecords(std::string_view batch, int shards, std::vector<std::string>* parts) {
  parts->assign(static_cast<size_t>(shards), std::string());
  ByteReader in(batch);
  ParsedRecord r;
  while (in.remaining() > 0) {
    const size_t begin = in.position();
    if (ParseRecord(&in, &r) != ImportError::kNone) return false;
    (*parts)[r.slot % shards].append(batch.substr(begin, in.position() - begin));
  }
  return true;
}

size_t DropSlots(Store& store, const SlotFunction& slot_of, const SlotSet& slots,
                 ExportCursor* cursor, size_t max_visit) {
  size_t erased = 0;
  size_t visited = 0;
  max_visit = std::max<size_t>(max_visit, 1);
  while (!cursor->done && visited < max_visit) {
    const size_t step = std::min<size_t>(max_visit - visited, 1024);
    cursor->scan = store.Scan(cursor->scan, step, [&](std::string_view key, Store::Ref ref) {
      ++visited;
      if (slots.Contains(slot_of(key))) {
        store.Erase(ref);
        ++erased;
      }
    });
    if (cursor->scan == 0) cursor->done = true;
  }
  return erased;
}

}  // namespace keep::core
