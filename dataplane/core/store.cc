#include "dataplane/core/store.h"

// Inlined: a key's hash is on every request's path (twice: its slot, its table entry), and for
// short keys the call into libxxhash cost as much as the hashing.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>

#include "dataplane/core/chunk_pool.h"
#include "dataplane/core/dash_table.h"
#include "dataplane/core/record.h"
#include "dataplane/core/slab_allocator.h"
#include "dataplane/core/value_arena.h"

namespace keep::core {

namespace rec = record;
using Slot = DashTable::Slot;

namespace {

// One random seed per process: table layout then differs between runs, so a client cannot
// precompute colliding keys.
uint64_t ProcessSeed() {
  static const uint64_t seed = [] {
    std::random_device device;
    return (uint64_t{device()} << 32) ^ device();
  }();
  return seed;
}

Slot* SlotOf(Store::Ref ref) { return reinterpret_cast<Slot*>(ref); }
Store::Ref RefOf(Slot* slot) { return reinterpret_cast<Store::Ref>(slot); }
uint8_t* RecordOf(Slot slot) { return static_cast<uint8_t*>(DashTable::Pointer(slot)); }
uint8_t* RecordOf(Store::Ref ref) { return RecordOf(*SlotOf(ref)); }

// What a value section will hold.
struct ValueSpec {
  uint8_t kind = 0;             // 0 (inline), rec::kInteger or rec::kExternal
  uint32_t field = 0;           // the header's value field
  const char* bytes = nullptr;  // inline: source of the first copy_length bytes
  size_t copy_length = 0;       // inline: the rest up to `field` is zero-filled
  int64_t integer = 0;
  void* block = nullptr;  // external
  uint32_t capacity = 0;  // external
};

}  // namespace

struct Store::Impl {
  explicit Impl(Store* owner) : store(owner), seed(ProcessSeed()), table(&slab, &Rehash, this) {}

  Store* store;
  // Member order matters: the table frees into the slab, which returns chunks to the pool.
  ChunkPool pool;
  SlabAllocator slab{&pool};
  ValueArena arena{&pool};
  uint64_t seed;
  DashTable table;
  size_t with_expiry = 0;
  size_t logical_bytes = 0;
  int64_t lag_current = 0;
  int64_t lag_previous = 0;
  // The last slot Find or Insert returned and its hash, so Erase(ref) right after needs no hash.
  Slot* last_slot = nullptr;
  uint64_t last_hash = 0;
  char scratch[kValueScratch][24];
  unsigned scratch_next = 0;

  uint64_t Hash(std::string_view key) const {
    return XXH3_64bits_withSeed(key.data(), key.size(), seed);
  }

  // The hashes PrefetchSlot computed for the batch being executed, found again by the key's
  // address and length (its bytes stay where the batch was parsed until the batch is over), so
  // PrefetchRecord and Find do not hash the key a second and third time. Entries of an earlier
  // batch are ignored by their generation (Store::ForgetKeyHashes). A collision only means the
  // hash is computed again.
  struct KeyHashMemo {
    const char* data = nullptr;
    size_t size = 0;
    uint64_t generation = 0;
    uint64_t hash = 0;
  };
  static constexpr int kKeyHashMemoBits = 6;
  mutable std::array<KeyHashMemo, size_t{1} << kKeyHashMemoBits> key_hashes{};
  uint64_t key_hash_generation = 1;

  static size_t MemoIndex(const char* data) {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(data) * 0x9E3779B97F4A7C15ull) >>
                               (64 - kKeyHashMemoBits));
  }
  uint64_t RememberHash(std::string_view key) const {
    const uint64_t hash = Hash(key);
    key_hashes[MemoIndex(key.data())] = {key.data(), key.size(), key_hash_generation, hash};
    return hash;
  }
  uint64_t KeyHash(std::string_view key) const {
    const KeyHashMemo& memo = key_hashes[MemoIndex(key.data())];
    if (memo.data == key.data() && memo.size == key.size() &&
        memo.generation == key_hash_generation) {
      return memo.hash;
    }
    return Hash(key);
  }
  static uint64_t Rehash(const void* context, Slot slot) {
    return static_cast<const Impl*>(context)->Hash(rec::Key(RecordOf(slot)));
  }

  uint8_t* AllocateRecord(size_t size) {
    return static_cast<uint8_t*>(size <= SlabAllocator::kMaxSize ? slab.Allocate(size)
                                                                 : arena.Allocate(size));
  }
  void FreeRecordBytes(uint8_t* r, size_t size) {
    if (size <= SlabAllocator::kMaxSize) {
      slab.Free(r, size);
    } else {
      arena.Free(r, size);
    }
  }
  // Whether a record of `from` bytes can become `to` bytes without moving.
  static bool SameBlock(size_t from, size_t to) {
    if (from <= SlabAllocator::kMaxSize && to <= SlabAllocator::kMaxSize) {
      return SlabAllocator::ClassOf(from) == SlabAllocator::ClassOf(to);
    }
    if (from > SlabAllocator::kMaxSize && to > SlabAllocator::kMaxSize) {
      return ValueArena::ClassSize(from) == ValueArena::ClassSize(to);
    }
    return false;
  }

  static size_t ValueLength(const uint8_t* r) {
    if (r[0] & rec::kInteger) {
      char buf[24];
      return rec::FormatInteger(rec::LoadInteger(rec::ValueBytes(r), rec::ValueField(r)), buf);
    }
    return rec::ValueField(r);
  }

  // A slot and its control byte: each key's share of the table.
  static constexpr size_t kSlotShare = sizeof(Slot) + 1;
  static size_t AllocationSize(size_t size) {
    return size <= SlabAllocator::kMaxSize ? SlabAllocator::ClassSize(size)
                                           : ValueArena::ClassSize(size);
  }
  static size_t Footprint(const uint8_t* r) {
    size_t bytes = AllocationSize(rec::Size(r)) + kSlotShare;
    if (r[0] & rec::kExternal) {
      bytes += ValueArena::ClassSize(rec::ExternalCapacity(rec::ValueBytes(r)));
    }
    return bytes;
  }
  ClassStats& StatsOf(const uint8_t* r) {
    return store->class_stats_[store->classes_.ClassOf(rec::Key(r))];
  }
  // Counts a new record in its class.
  void CountRecord(const uint8_t* r) {
    ClassStats& stats = StatsOf(r);
    ++stats.keys;
    stats.bytes += Footprint(r);
  }

  // Frees a record and what it owns; the table slot is the caller's business.
  void FreeRecord(uint8_t* r) {
    ClassStats& stats = StatsOf(r);
    --stats.keys;
    stats.bytes -= Footprint(r);
    logical_bytes -= rec::KeyLength(r) + ValueLength(r);
    if (r[0] & rec::kHasExpiry) --with_expiry;
    if (r[0] & rec::kExternal) {
      const uint8_t* v = rec::ValueBytes(r);
      arena.Free(rec::ExternalPointer(v), rec::ExternalCapacity(v));
    }
    FreeRecordBytes(r, rec::Size(r));
  }

  ValueSpec Encode(std::string_view value) {
    ValueSpec spec;
    int64_t integer;
    if (value.size() <= 20 && rec::ParseCanonicalInteger(value, &integer)) {
      spec.kind = rec::kInteger;
      spec.integer = integer;
      spec.field = rec::IntegerWidth(integer);
    } else if (value.size() >= rec::kExternalMin) {
      spec.kind = rec::kExternal;
      spec.field = static_cast<uint32_t>(value.size());
      spec.capacity = static_cast<uint32_t>(ValueArena::ClassSize(value.size()));
      spec.block = arena.Allocate(value.size());
      std::memcpy(spec.block, value.data(), value.size());
    } else {
      spec.field = static_cast<uint32_t>(value.size());
      spec.bytes = value.data();
      spec.copy_length = value.size();
    }
    return spec;
  }

  // A new record; `flags` contributes the type and the pinned/lock bits. Accounting of logical
  // bytes and expiry counts is the caller's.
  uint8_t* MakeRecord(uint8_t flags, uint8_t clock, std::string_view key, int64_t deadline,
                      const ValueSpec& v) {
    flags &= static_cast<uint8_t>(~(rec::kInteger | rec::kExternal | rec::kLong | rec::kHasExpiry));
    flags |= v.kind;
    if (deadline != kNoExpiry) flags |= rec::kHasExpiry;
    if (rec::NeedsLong(key.size(), v.field)) flags |= rec::kLong;
    const size_t size = rec::Size(flags, key.size(), v.field);
    uint8_t* r = AllocateRecord(size);
    rec::WriteHeader(r, flags, clock, static_cast<uint32_t>(key.size()), v.field);
    if (flags & rec::kHasExpiry) rec::SetDeadline(r, deadline);
    uint8_t* k = r + rec::HeaderSize(flags);
    std::memcpy(k, key.data(), key.size());
    uint8_t* value = k + key.size();
    if (v.kind == rec::kInteger) {
      rec::StoreInteger(value, v.integer, v.field);
    } else if (v.kind == rec::kExternal) {
      rec::SetExternal(value, v.block, v.capacity);
    } else {
      if (v.copy_length > 0) std::memcpy(value, v.bytes, v.copy_length);
      std::memset(value + v.copy_length, 0, v.field - v.copy_length);
    }
    return r;
  }

  // Replaces the record of `slot` by `fresh` (built from it), freeing the old one.
  void Replace(Slot* slot, uint8_t* old, uint8_t* fresh) {
    if (old[0] & rec::kExternal) {
      const uint8_t* v = rec::ValueBytes(old);
      void* block = rec::ExternalPointer(v);
      // The new record may have taken over the block.
      if (!(fresh[0] & rec::kExternal) || rec::ExternalPointer(rec::ValueBytes(fresh)) != block) {
        arena.Free(block, rec::ExternalCapacity(v));
      }
    }
    FreeRecordBytes(old, rec::Size(old));
    DashTable::SetPointer(slot, fresh);
  }

  void EraseSlot(uint64_t hash, Slot* slot, bool expired = false) {
    if (expired) {
      ++StatsOf(RecordOf(*slot)).expired;
      ++store->expired_keys_;
    }
    FreeRecord(RecordOf(*slot));
    table.Erase(hash, slot);
    last_slot = nullptr;
  }

  uint64_t HashOf(Slot* slot) const {
    return slot == last_slot ? last_hash : Hash(rec::Key(RecordOf(*slot)));
  }
};

namespace {

// Keeps the class's byte count right across a change of one entry's record (its key, hence its
// class, stays).
class FootprintChange {
 public:
  FootprintChange(Store::Impl& m, Slot* slot)
      : m_(m), slot_(slot), before_(Store::Impl::Footprint(RecordOf(*slot))) {}
  ~FootprintChange() {
    const uint8_t* r = RecordOf(*slot_);
    m_.StatsOf(r).bytes += Store::Impl::Footprint(r) - before_;
  }

 private:
  Store::Impl& m_;
  Slot* slot_;
  size_t before_;
};

bool Expired(Slot slot, int64_t now_ms) {
  return (slot & DashTable::kExpiryBit) != 0 && rec::Deadline(RecordOf(slot)) <= now_ms;
}

}  // namespace

Store::Store() : impl_(std::make_unique<Impl>(this)), class_stats_(1) {}
Store::~Store() = default;

uint8_t Store::AccessClock(Ref ref) const { return RecordOf(ref)[1]; }

Store::Ref Store::Find(std::string_view key) {
  Impl& m = *impl_;
  const uint64_t hash = m.KeyHash(key);
  Slot* slot =
      m.table.Find(hash, [key](Slot s) { return rec::SameKey(rec::Key(RecordOf(s)), key); });
  if (slot == nullptr) return nullptr;
  if (Expired(*slot, now_ms_)) {
    m.EraseSlot(hash, slot, true);
    return nullptr;
  }
  CountAccess();
  RecordOf(*slot)[1] = clock_;
  m.last_slot = slot;
  m.last_hash = hash;
  return RefOf(slot);
}

void Store::ForgetKeyHashes() { ++impl_->key_hash_generation; }

void Store::PrefetchSlot(std::string_view key) const {
  impl_->table.PrefetchGroup(impl_->RememberHash(key));
}

void Store::PrefetchRecord(std::string_view key) const {
  // Header, key and a small value: a GET of a 128-byte value reads three lines.
  impl_->table.PrefetchRecord(impl_->KeyHash(key), 3);
}

void Store::PrefetchKeys(std::span<const std::string_view> keys) const {
  if (keys.size() < 2) return;
  for (std::string_view key : keys) PrefetchSlot(key);
  for (std::string_view key : keys) PrefetchRecord(key);
}

Store::Ref Store::Insert(std::string_view key, std::string_view value, ValueType type) {
  Impl& m = *impl_;
  const uint64_t hash = m.KeyHash(key);
  ValueSpec spec = m.Encode(value);
  // Lock records are never evicted (design §2.5): the flags say so without decoding the type.
  const uint8_t lock_flags = type == ValueType::kLock ? (rec::kLock | rec::kPinned) : 0;
  const uint8_t flags =
      static_cast<uint8_t>((static_cast<uint8_t>(type) << rec::kTypeShift) | lock_flags);
  CountAccess();
  uint8_t* r = m.MakeRecord(flags, clock_, key, kNoExpiry, spec);
  m.CountRecord(r);
  m.logical_bytes += key.size() + value.size();
  Slot* slot = m.table.Insert(hash, reinterpret_cast<uintptr_t>(r));
  m.last_slot = slot;
  m.last_hash = hash;
  return RefOf(slot);
}

bool Store::Erase(std::string_view key) {
  Impl& m = *impl_;
  const uint64_t hash = m.KeyHash(key);
  Slot* slot =
      m.table.Find(hash, [key](Slot s) { return rec::SameKey(rec::Key(RecordOf(s)), key); });
  if (slot == nullptr) return false;
  const bool expired = Expired(*slot, now_ms_);
  m.EraseSlot(hash, slot, expired);
  return !expired;
}

void Store::Erase(Ref ref) {
  Impl& m = *impl_;
  m.EraseSlot(m.HashOf(SlotOf(ref)), SlotOf(ref));
}

std::string_view Store::Key(Ref ref) const { return rec::Key(RecordOf(ref)); }

std::string_view Store::Value(Ref ref) const {
  const uint8_t* r = RecordOf(ref);
  const uint8_t* v = rec::ValueBytes(r);
  const uint8_t flags = r[0];
  if ((flags & (rec::kInteger | rec::kExternal)) == 0) {
    return {reinterpret_cast<const char*>(v), rec::ValueField(r)};
  }
  if (flags & rec::kExternal) {
    return {static_cast<const char*>(rec::ExternalPointer(v)), rec::ValueField(r)};
  }
  char* buf = impl_->scratch[impl_->scratch_next++ % kValueScratch];
  return {buf, rec::FormatInteger(rec::LoadInteger(v, rec::ValueField(r)), buf)};
}

ValueType Store::Type(Ref ref) const {
  return static_cast<ValueType>(RecordOf(ref)[0] >> rec::kTypeShift);
}

bool Store::IntegerValue(Ref ref, int64_t* value) const {
  const uint8_t* r = RecordOf(ref);
  if ((r[0] & rec::kInteger) == 0) return false;
  *value = rec::LoadInteger(rec::ValueBytes(r), rec::ValueField(r));
  return true;
}

void Store::SetInteger(Ref ref, int64_t value) {
  uint8_t* r = RecordOf(ref);
  const uint32_t width = rec::IntegerWidth(value);
  if ((r[0] & rec::kInteger) && rec::ValueField(r) == width) {
    Impl& m = *impl_;
    m.logical_bytes -= Impl::ValueLength(r);
    rec::StoreInteger(rec::ValueBytes(r), value, width);
    m.logical_bytes += Impl::ValueLength(r);
    return;
  }
  char buf[24];
  SetValue(ref, std::string_view(buf, rec::FormatInteger(value, buf)));
}

void Store::SetValue(Ref ref, std::string_view value) {
  Impl& m = *impl_;
  Slot* slot = SlotOf(ref);
  FootprintChange change(m, slot);
  uint8_t* r = RecordOf(*slot);
  const uint8_t flags = r[0];
  const size_t old_length = Impl::ValueLength(r);
  const std::string_view key = rec::Key(r);
  // Fast paths that keep the record where it is.
  if (flags & rec::kExternal) {
    uint8_t* v = rec::ValueBytes(r);
    if (value.size() >= rec::kExternalMin && value.size() <= rec::ExternalCapacity(v)) {
      std::memmove(rec::ExternalPointer(v), value.data(), value.size());
      rec::Store32(r + 6, static_cast<uint32_t>(value.size()));
      m.logical_bytes += value.size() - old_length;
      return;
    }
  } else if (value.size() < rec::kExternalMin) {
    int64_t integer;
    const bool is_integer = value.size() <= 20 && rec::ParseCanonicalInteger(value, &integer);
    const uint32_t field =
        is_integer ? rec::IntegerWidth(integer) : static_cast<uint32_t>(value.size());
    const uint8_t kind = is_integer ? rec::kInteger : 0;
    const bool long_form = rec::NeedsLong(key.size(), field);
    const size_t old_size = rec::Size(r);
    const uint8_t new_flags = static_cast<uint8_t>((flags & ~(rec::kInteger | rec::kLong)) | kind |
                                                   (long_form ? rec::kLong : 0));
    if (long_form == rec::IsLong(r) &&
        Impl::SameBlock(old_size, rec::Size(new_flags, key.size(), field))) {
      uint8_t* v = rec::ValueBytes(r);
      if (is_integer) {
        rec::StoreInteger(v, integer, field);
      } else {
        std::memmove(v, value.data(), value.size());
      }
      r[0] = new_flags;
      if (long_form) {
        rec::Store32(r + 6, field);
      } else {
        r[3] = static_cast<uint8_t>(field);
      }
      m.logical_bytes += value.size() - old_length;
      return;
    }
  }
  const int64_t deadline = (flags & rec::kHasExpiry) ? rec::Deadline(r) : kNoExpiry;
  ValueSpec spec = m.Encode(value);
  uint8_t* fresh = m.MakeRecord(flags, r[1], key, deadline, spec);
  m.Replace(slot, r, fresh);
  m.logical_bytes += value.size() - old_length;
}

char* Store::ResizeValue(Ref ref, size_t length) {
  Impl& m = *impl_;
  Slot* slot = SlotOf(ref);
  FootprintChange change(m, slot);
  uint8_t* r = RecordOf(*slot);
  const uint8_t flags = r[0];
  const size_t old_length = Impl::ValueLength(r);
  m.logical_bytes += length - old_length;
  uint8_t* v = rec::ValueBytes(r);
  if (flags & rec::kExternal) {
    auto* block = static_cast<char*>(rec::ExternalPointer(v));
    if (length >= rec::kExternalMin && length <= rec::ExternalCapacity(v)) {
      if (length > old_length) std::memset(block + old_length, 0, length - old_length);
      rec::Store32(r + 6, static_cast<uint32_t>(length));
      return block;
    }
  } else if ((flags & rec::kInteger) == 0 && length < rec::kExternalMin) {
    const std::string_view key = rec::Key(r);
    const bool long_form = rec::NeedsLong(key.size(), static_cast<uint32_t>(length));
    const uint8_t new_flags =
        static_cast<uint8_t>((flags & ~rec::kLong) | (long_form ? rec::kLong : 0));
    if (long_form == rec::IsLong(r) &&
        Impl::SameBlock(rec::Size(r),
                        rec::Size(new_flags, key.size(), static_cast<uint32_t>(length)))) {
      if (length > old_length) std::memset(v + old_length, 0, length - old_length);
      if (long_form) {
        rec::Store32(r + 6, static_cast<uint32_t>(length));
      } else {
        r[3] = static_cast<uint8_t>(length);
      }
      return reinterpret_cast<char*>(v);
    }
  }
  // Move: the old value (its string form for an integer) is the prefix of the new one.
  char digits[24];
  const char* old_bytes;
  if (flags & rec::kInteger) {
    old_bytes = digits;
    rec::FormatInteger(rec::LoadInteger(v, rec::ValueField(r)), digits);
  } else if (flags & rec::kExternal) {
    old_bytes = static_cast<const char*>(rec::ExternalPointer(v));
  } else {
    old_bytes = reinterpret_cast<const char*>(v);
  }
  const size_t keep = std::min(old_length, length);
  ValueSpec spec;
  spec.field = static_cast<uint32_t>(length);
  if (length >= rec::kExternalMin) {
    spec.kind = rec::kExternal;
    // Growing a large value (APPEND, SETRANGE) leaves headroom so repeated growth stays linear.
    size_t want =
        length > ValueArena::kLargeSize && length > old_length ? length + length / 4 : length;
    spec.capacity = static_cast<uint32_t>(ValueArena::ClassSize(want));
    spec.block = m.arena.Allocate(spec.capacity);
    std::memcpy(spec.block, old_bytes, keep);
    std::memset(static_cast<char*>(spec.block) + keep, 0, length - keep);
  } else {
    spec.bytes = old_bytes;
    spec.copy_length = keep;
  }
  const int64_t deadline = (flags & rec::kHasExpiry) ? rec::Deadline(r) : kNoExpiry;
  uint8_t* fresh = m.MakeRecord(flags, r[1], rec::Key(r), deadline, spec);
  m.Replace(slot, r, fresh);
  uint8_t* fv = rec::ValueBytes(fresh);
  return spec.kind == rec::kExternal ? static_cast<char*>(rec::ExternalPointer(fv))
                                     : reinterpret_cast<char*>(fv);
}

int64_t Store::ExpireAt(Ref ref) const {
  return (*SlotOf(ref) & DashTable::kExpiryBit) ? rec::Deadline(RecordOf(ref)) : kNoExpiry;
}

void Store::SetExpireAt(Ref ref, int64_t deadline_ms) {
  Impl& m = *impl_;
  Slot* slot = SlotOf(ref);
  uint8_t* r = RecordOf(*slot);
  const bool had = (r[0] & rec::kHasExpiry) != 0;
  const bool has = deadline_ms != kNoExpiry;
  if (had && has) {
    rec::SetDeadline(r, deadline_ms);
    return;
  }
  if (!had && !has) return;
  FootprintChange change(m, slot);
  const size_t old_size = rec::Size(r);
  const size_t new_size = has ? old_size + rec::kExpiryBytes : old_size - rec::kExpiryBytes;
  const size_t body = old_size - rec::HeaderSize(r[0]);  // key and value section
  if (Impl::SameBlock(old_size, new_size)) {
    uint8_t* lengths_end = r + rec::LengthsEnd(r[0]);
    if (has) {
      std::memmove(lengths_end + rec::kExpiryBytes, lengths_end, body);
      r[0] |= rec::kHasExpiry;
      rec::SetDeadline(r, deadline_ms);
    } else {
      std::memmove(lengths_end, lengths_end + rec::kExpiryBytes, body);
      r[0] &= static_cast<uint8_t>(~rec::kHasExpiry);
    }
  } else {
    uint8_t* fresh = m.AllocateRecord(new_size);
    const uint8_t flags =
        has ? (r[0] | rec::kHasExpiry) : static_cast<uint8_t>(r[0] & ~rec::kHasExpiry);
    const size_t lengths_end = rec::LengthsEnd(r[0]);
    std::memcpy(fresh, r, lengths_end);
    fresh[0] = flags;
    if (has) rec::SetDeadline(fresh, deadline_ms);
    std::memcpy(fresh + rec::HeaderSize(flags), r + rec::HeaderSize(r[0]), body);
    m.FreeRecordBytes(r, old_size);  // the external block, if any, now belongs to `fresh`
    DashTable::SetPointer(slot, fresh);
  }
  DashTable::SetExpiryBit(slot, has);
  if (has) {
    ++m.with_expiry;
  } else {
    --m.with_expiry;
  }
}

size_t Store::Size() const { return impl_->table.size(); }
size_t Store::KeysWithExpiry() const { return impl_->with_expiry; }
size_t Store::UsedBytes() const {
  return impl_->pool.reserved_bytes() + impl_->table.directory_bytes();
}
size_t Store::LogicalBytes() const { return impl_->logical_bytes; }

Store::MemoryStats Store::GetMemoryStats() const {
  const Impl& m = *impl_;
  MemoryStats stats;
  stats.used_bytes = UsedBytes();
  stats.table_bytes = m.table.table_bytes();
  stats.directory_bytes = m.table.directory_bytes();
  stats.table_slots = m.table.slot_capacity();
  stats.segments = m.table.segment_count();
  stats.record_bytes = m.slab.live_bytes() - stats.table_bytes;
  stats.arena_bytes = m.arena.live_bytes();
  return stats;
}
int64_t Store::ExpiryLagMs() const { return std::max(impl_->lag_current, impl_->lag_previous); }
void Store::Maintain() { impl_->pool.Maintain(); }

void Store::UsePrefaulter(ChunkPrefaulter* prefaulter, int index) {
  impl_->pool.SetPrefaulter(prefaulter, index);
}

void Store::Clear() {
  Impl& m = *impl_;
  // Everything lives in the allocators: drop them wholesale instead of freeing entry by entry.
  m.table.Forget();
  m.slab.Reset();
  m.arena.Reset();
  // Every chunk the store used is dirty and resident: unmap them all, so the fresh table starts
  // in a fresh mapping and the process is back to its starting size.
  m.pool.Trim();
  m.table.Clear();
  m.pool.Maintain();
  m.with_expiry = 0;
  m.logical_bytes = 0;
  for (ClassStats& stats : class_stats_) stats.keys = stats.bytes = 0;
  m.last_slot = nullptr;
  m.lag_current = m.lag_previous = 0;
  defrag_active_ = false;
  defrag_rearm_bytes_ = 0;
}

uint64_t Store::Scan(uint64_t cursor, size_t count,
                     const std::function<void(std::string_view key, Ref ref)>& visit) {
  const int64_t now = now_ms_;
  return impl_->table.Scan(cursor, count, [&](Slot* slot) {
    if (!Expired(*slot, now)) visit(rec::Key(RecordOf(*slot)), RefOf(slot));
  });
}

size_t Store::ExpireSome(size_t budget) {
  Impl& m = *impl_;
  m.pool.Maintain();
  if (m.with_expiry == 0) return 0;
  const int64_t now = now_ms_;
  bool wrapped = false;
  size_t erased = m.table.Sweep(
      budget,
      [&](Slot slot) {
        uint8_t* r = RecordOf(slot);
        const int64_t deadline = rec::Deadline(r);
        if (deadline > now) return false;
        m.lag_current = std::max(m.lag_current, now - deadline);
        ++m.StatsOf(r).expired;
        m.FreeRecord(r);
        return true;
      },
      &wrapped);
  if (wrapped) {
    m.lag_previous = m.lag_current;
    m.lag_current = 0;
  }
  if (erased > 0) m.last_slot = nullptr;
  expired_keys_ += erased;
  // Everything expired: give the table's segments and the record pages back at once (the slab
  // allocator keeps freed small objects for reuse otherwise, and segments never merge).
  if (erased > 0 && m.table.size() == 0 && m.table.segment_count() > 1) Clear();
  return erased;
}

size_t Store::FragmentedBytes() const { return impl_->slab.fragmented_bytes(); }

bool Store::DefragSome(size_t budget) {
  const size_t kFloorBytes = defrag_floor_bytes_;
  Impl& m = *impl_;
  const size_t live = m.slab.live_bytes();
  // Every turn asks: answer a store that is not fragmented without walking the size classes.
  if (!defrag_active_ && m.slab.fragmented_bytes_bound() < live / 32 + kFloorBytes) return false;
  const size_t fragmented = m.slab.fragmented_bytes();
  if (!defrag_active_) {
    if (fragmented < live / 32 + kFloorBytes || fragmented < defrag_rearm_bytes_) return false;
    defrag_active_ = true;
  } else if (fragmented < live / 64 + kFloorBytes / 2) {
    defrag_active_ = false;
    defrag_rearm_bytes_ = 0;
    return false;
  }
  // The more fragmented, the more work per turn (as Redis scales its defrag CPU between
  // active-defrag-cycle-min and -max): up to 8x `budget` at 8x the trigger level, so compaction
  // keeps pace with eviction that empties a whole size class.
  const size_t trigger = live / 32 + kFloorBytes;
  budget *= std::clamp<size_t>(fragmented / std::max<size_t>(trigger, 1), 1, 8);
  const bool worth_it = m.slab.Drain(budget, [&](void* object, size_t size) {
    auto* r = static_cast<uint8_t*>(object);
    // Table blocks share a few size classes with records, and an object freed since the page
    // was chosen holds a stale record: only an object the table points at is a live record.
    // Its header is checked against the object's bounds before its key is read.
    if (rec::LengthsEnd(r[0]) > size || rec::HeaderSize(r[0]) > size) return false;
    const size_t record_size = rec::Size(r);
    if (record_size > size || SlabAllocator::ClassSize(record_size) != size) return false;
    Slot* slot =
        m.table.Find(m.Hash(rec::Key(r)), [&](Slot candidate) { return RecordOf(candidate) == r; });
    if (slot == nullptr) {
      ++defrag_misses_;
      return false;
    }
    void* fresh = m.slab.Allocate(size);
    std::memcpy(fresh, r, size);
    m.slab.Free(r, size);
    DashTable::SetPointer(slot, fresh);
    ++defrag_hits_;
    return true;
  });
  if (!worth_it) {
    // Free space spread thinly over every class: nothing to gain until it grows.
    defrag_active_ = false;
    defrag_rearm_bytes_ = fragmented + live / 64 + kFloorBytes / 2;
  }
  return defrag_active_;
}

Store::Ref Store::RandomKey(uint64_t random) {
  Impl& m = *impl_;
  for (;;) {
    Slot* slot = m.table.RandomSlot(random);
    if (slot == nullptr) return nullptr;
    if (!Expired(*slot, now_ms_)) return RefOf(slot);
    m.EraseSlot(Impl::Rehash(&m, *slot), slot, true);
    random = random * 6364136223846793005ull + 1442695040888963407ull;
  }
}

// --- Key classes, the memory cap and eviction ---

void Store::CountAccess() {
  if (--clock_countdown_ == 0) {
    ++clock_;
    clock_countdown_ = std::max<uint64_t>(1, impl_->table.size() / 64);
  }
}

uint64_t Store::NextRandom() {
  // splitmix64: RandomSlot uses the low, middle and top bits separately.
  uint64_t z = (random_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void Store::SetKeyClasses(const KeyClassTable& classes) {
  classes_ = classes;
  std::vector<ClassStats> stats(classes_.size());
  // Keep the event counters of classes that keep their name.
  for (size_t i = 0; i < stats.size(); ++i) {
    if (i < class_stats_.size()) {
      stats[i].evicted = class_stats_[i].evicted;
      stats[i].expired = class_stats_[i].expired;
    }
  }
  class_stats_ = std::move(stats);
  Impl& m = *impl_;
  m.table.ForEach([&](Slot* slot) { m.CountRecord(RecordOf(*slot)); });
}

size_t Store::KeyFootprint(Ref ref) const { return Impl::Footprint(RecordOf(ref)); }

size_t Store::AllocatedBytes() const {
  const Impl& m = *impl_;
  return m.slab.live_bytes() + m.arena.live_bytes() + m.table.directory_bytes();
}

bool Store::EvictOne() {
  Impl& m = *impl_;
  Slot* lru = nullptr;
  uint8_t lru_idle = 0;
  Slot* ttl = nullptr;
  int64_t ttl_deadline = 0;
  int found = 0;
  // Pinned, none-class and TTL-less ttl-class entries are skipped, so look a bit further than
  // kEvictionSamples, but never without bound.
  for (int attempt = 0; attempt < kEvictionSamples * 4 && found < kEvictionSamples; ++attempt) {
    Slot* slot = m.table.RandomSlot(NextRandom());
    if (slot == nullptr) return false;
    const uint8_t* r = RecordOf(*slot);
    if (Expired(*slot, now_ms_)) {
      // Already dead: reclaiming it frees memory without evicting anything live.
      m.EraseSlot(Impl::Rehash(&m, *slot), slot, true);
      return true;
    }
    if (r[0] & rec::kPinned) continue;  // locks
    switch (classes_.PolicyOf(classes_.ClassOf(rec::Key(r)))) {
      case EvictionPolicy::kLru: {
        const uint8_t idle = static_cast<uint8_t>(clock_ - r[1]);
        if (lru == nullptr || idle > lru_idle) {
          lru = slot;
          lru_idle = idle;
        }
        ++found;
        break;
      }
      case EvictionPolicy::kTtl:
        if (*slot & DashTable::kExpiryBit) {
          const int64_t deadline = rec::Deadline(r);
          if (ttl == nullptr || deadline < ttl_deadline) {
            ttl = slot;
            ttl_deadline = deadline;
          }
          ++found;
        }
        break;
      case EvictionPolicy::kNone:
      case EvictionPolicy::kPinned:
        break;
    }
  }
  Slot* victim = lru != nullptr ? lru : ttl;
  if (lru != nullptr && ttl != nullptr) {
    // Ages and deadlines do not compare: take turns between the two kinds of candidate.
    victim = prefer_ttl_ ? ttl : lru;
    prefer_ttl_ = !prefer_ttl_;
  }
  if (victim == nullptr) return false;
  ++m.StatsOf(RecordOf(*victim)).evicted;
  ++evicted_keys_;
  m.EraseSlot(Impl::Rehash(&m, *victim), victim);
  return true;
}

size_t Store::EvictSome(size_t budget) {
  size_t evicted = 0;
  // A few empty-handed samples in a row are bad luck; many mean nothing here can go.
  int misses = 0;
  while (evicted < budget && misses < 8 && OverLimit()) {
    if (EvictOne()) {
      ++evicted;
      misses = 0;
    } else {
      ++misses;
    }
  }
  return evicted;
}

bool Store::MakeRoom(uint8_t klass, size_t budget) {
  if (!OverLimit()) return true;
  if (classes_.PolicyOf(klass) == EvictionPolicy::kNone) return false;
  uint64_t evictable = 0;
  for (size_t i = 0; i < classes_.size(); ++i) {
    const EvictionPolicy policy = classes_.PolicyOf(static_cast<uint8_t>(i));
    if (policy == EvictionPolicy::kLru || policy == EvictionPolicy::kTtl) {
      evictable += class_stats_[i].keys;
    }
  }
  if (evictable == 0 && KeysWithExpiry() == 0) return false;
  return EvictSome(budget) > 0 || !OverLimit();
}

}  // namespace keep::core
