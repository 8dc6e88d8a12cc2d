// The shard's hash table: extendible hashing over segments of SIMD-probed groups.
//
// Geometry. A directory of 2^global_depth pointers, indexed by the top bits of the hash, maps to
// segments; a segment of local depth d owns the 2^(global_depth - d) directory entries that share
// its top d bits. A segment is an open-addressing table of 4..64 groups; a group is 16 control
// bytes followed by 16 8-byte slots (144 bytes), so one SSE2 compare of the control bytes against
// a 7-bit tag rejects most slots without touching them. Groups come in blocks of 4 (576 bytes),
// the only size the table allocates besides the 144-byte segment headers.
//
// Slot: bits 0-47 record pointer, bit 48 "record has a deadline" (lets the expiry sweep skip
// persistent keys without touching their records), bits 49-63 fifteen more hash bits: the home
// group inside the segment (fast range over the group count) and, compared before the key, a
// second filter that makes false key compares about one in 4 million.
//
// Growth never stalls: a segment whose full plus deleted slots reach 7/8 is rebuilt from its own
// slots (no record access): in place when a sixteenth of it is tombstones, else one block (64
// slots) bigger; at 16 blocks it splits into two segments of depth d + 1,
// recomputing each key's hash for the split bit. Both are bounded by one segment (at most 1024
// slots); a directory doubling copies only pointers. Growing in one-block steps keeps the load
// between about 0.78 and 0.875, which is what fits a small key in about 10 bytes of table.
//
// Hash bits: 0-6 tag, 7-21 the slot's fifteen bits, 38-63 the directory (at most 26 bits).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dataplane/core/slab_allocator.h"

namespace keep::core {

class DashTable {
 public:
  using Slot = uint64_t;

  static constexpr uint64_t kPointerMask = (uint64_t{1} << 48) - 1;
  static constexpr uint64_t kExpiryBit = uint64_t{1} << 48;
  static constexpr int kBitsShift = 49;
  static constexpr uint32_t kBitsRange = 1u << 15;

  static constexpr int kGroupWidth = 16;
  static constexpr size_t kGroupBytes = kGroupWidth + kGroupWidth * sizeof(Slot);
  static constexpr int kGroupsPerBlock = 4;
  static constexpr size_t kBlockBytes = kGroupBytes * kGroupsPerBlock;
  static constexpr int kSlotsPerBlock = kGroupWidth * kGroupsPerBlock;
  static constexpr int kMaxBlocks = 16;
  static constexpr int kMaxDepth = 26;
  // Every Scan cursor is below this (see Scan).
  static constexpr uint64_t kCursorLimit = uint64_t{1} << 47;
  // A segment grows when full + deleted slots reach 7/8 of its slots.
  static constexpr uint32_t kLoadPerBlock = kSlotsPerBlock * 7 / 8;

  static constexpr uint8_t kEmpty = 0x80;
  static constexpr uint8_t kDeleted = 0xFE;

  // The full hash of the key a slot points to, needed only when a segment splits.
  using RehashFn = uint64_t (*)(const void* context, Slot slot);

  DashTable(SlabAllocator* slab, RehashFn rehash, const void* context);
  ~DashTable();
  DashTable(const DashTable&) = delete;
  DashTable& operator=(const DashTable&) = delete;

  // GCC 12 deletes a __builtin_prefetch whose address is all a function computes (dead-code
  // elimination treats it as free of effects), which is exactly the shape of the batch prefetch
  // below: an asm statement it must keep.
  static void Prefetch(const void* address) {
#if defined(__x86_64__)
    asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(address)));
#else
    __builtin_prefetch(address);
#endif
  }

  static void* Pointer(Slot slot) { return reinterpret_cast<void*>(slot & kPointerMask); }
  static uint32_t SlotBits(uint64_t hash) { return (hash >> 7) & (kBitsRange - 1); }
  static void SetPointer(Slot* slot, const void* p) {
    *slot = (*slot & ~kPointerMask) | reinterpret_cast<uintptr_t>(p);
  }
  static void SetExpiryBit(Slot* slot, bool on) {
    *slot = on ? (*slot | kExpiryBit) : (*slot & ~kExpiryBit);
  }

  // The slot whose key `eq` accepts, or nullptr. `eq(Slot)` is only called on slots whose tag and
  // fifteen bits match.
  template <class Eq>
  Slot* Find(uint64_t hash, Eq&& eq) const {
    const Segment* seg = SegmentFor(hash);
    const uint8_t tag = hash & 0x7F;
    const uint64_t bits = SlotBits(hash);
    const uint32_t groups = GroupCount(seg);
    uint32_t g = Home(bits, groups);
    for (uint32_t probe = 0; probe < groups; ++probe) {
      uint8_t* group = GroupAt(seg, g);
      Slot* slots = SlotsOf(group);
      // A group spans three cache lines: fetch the slots' lines while the tags are compared.
      __builtin_prefetch(group + 64);
      __builtin_prefetch(group + 128);
      for (uint32_t m = MatchTag(group, tag); m != 0; m &= m - 1) {
        Slot* slot = &slots[std::countr_zero(m)];
        if ((*slot >> kBitsShift) == bits && eq(*slot)) return slot;
      }
      if (MatchEmpty(group) != 0) return nullptr;
      if (++g == groups) g = 0;
    }
    return nullptr;
  }

  // Prefetching for a batch of lookups: PrefetchGroup(h) for every key of the batch, then
  // PrefetchRecord(h) for every key (its group has arrived by then), then the Finds, whose misses
  // are then paid once and in parallel instead of one after another.
  void PrefetchGroup(uint64_t hash) const {
    const Segment* seg = SegmentFor(hash);
    const uint8_t* group = GroupAt(seg, Home(SlotBits(hash), GroupCount(seg)));
    Prefetch(group);
    Prefetch(group + 64);
    Prefetch(group + 128);
  }
  // Starts loading the first `lines` cache lines of the record the home group's first candidate
  // slot points to (nothing when the group has no candidate: a miss needs no record).
  void PrefetchRecord(uint64_t hash, int lines) const {
    const Segment* seg = SegmentFor(hash);
    const uint64_t bits = SlotBits(hash);
    uint8_t* group = GroupAt(seg, Home(bits, GroupCount(seg)));
    const Slot* slots = SlotsOf(group);
    for (uint32_t m = MatchTag(group, hash & 0x7F); m != 0; m &= m - 1) {
      const Slot slot = slots[std::countr_zero(m)];
      if ((slot >> kBitsShift) != bits) continue;
      const auto* record = static_cast<const uint8_t*>(Pointer(slot));
      for (int line = 0; line < lines; ++line) Prefetch(record + 64 * line);
      return;
    }
  }

  // Adds an entry for a key known to be absent. `payload` is the record pointer, optionally with
  // kExpiryBit. May restructure one segment: every Slot* obtained before is invalid afterwards.
  Slot* Insert(uint64_t hash, Slot payload);

  // Removes the entry at `slot` (from Find or Insert with the same hash).
  void Erase(uint64_t hash, Slot* slot);

  size_t size() const { return size_; }
  size_t segment_count() const { return segment_count_; }
  size_t slot_capacity() const { return total_blocks_ * kSlotsPerBlock; }
  int global_depth() const { return global_depth_; }
  // Bytes of the directory; blocks and segment headers are counted by the slab allocator.
  size_t directory_bytes() const { return directory_.capacity() * sizeof(Segment*); }
  // Bytes of blocks and segment headers at their class sizes.
  size_t table_bytes() const;

  // Frees every block and segment and starts over with one empty segment.
  void Clear();
  // Drops every segment without freeing it, for when the allocator was reset wholesale; Clear()
  // must follow before any other call.
  void Forget();

  // Calls f(Slot*) for every entry. f must not insert or erase.
  template <class F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < directory_.size(); i += Span(directory_[i])) {
      const Segment* seg = directory_[i];
      ForEachInSegment(seg, [&](uint8_t*, int, Slot* slot) { f(slot); });
    }
  }

  // Visits entries from `cursor` (0 starts) until about `count` were visited, calling f(Slot*);
  // returns the next cursor, 0 at the end. Order is by hash prefix, then by the slot's fifteen
  // bits, which neither growth nor splits change, so every entry present for the whole walk is
  // visited, and exactly once when the table did not grow. f may erase the slot it is given but
  // must not insert.
  //
  // Cursor: bits 0-15 position t inside the current segment, 16-31 the threshold T of the region
  // being finished, 32-37 the region's depth r, 38-63 the current segment's 26-bit prefix p.
  // A region is a segment that was partly visited and then split: its entries below T were
  // visited before the split, so each of its parts is visited from T (and in full, so a region
  // never nests inside another; such a call may visit up to one segment more than `count`).
  template <class F>
  uint64_t Scan(uint64_t cursor, size_t count, F&& f);

  // A pseudo-random entry, or nullptr when empty.
  Slot* RandomSlot(uint64_t random) const;

  // Walks slots with kExpiryBit from an internal cursor. For each, f(Slot) returns true to erase
  // it (after freeing what it points to). Each group scanned and each slot handed to f costs one
  // unit of `budget`. Returns the number of slots erased; *wrapped is set when the walk passed the
  // end of the table.
  template <class F>
  size_t Sweep(size_t budget, F&& f, bool* wrapped);

 private:
  struct Segment {
    uint32_t size;     // full slots
    uint32_t deleted;  // tombstones
    uint32_t prefix;   // top `depth` hash bits shared by its keys
    uint8_t depth;
    uint8_t blocks;
    uint16_t unused;
    uint8_t* block[kMaxBlocks];
  };
  static_assert(sizeof(Segment) == 144);

  static uint32_t GroupCount(const Segment* seg) { return seg->blocks * kGroupsPerBlock; }
  static uint32_t Threshold(const Segment* seg) { return seg->blocks * kLoadPerBlock; }
  static uint32_t Home(uint64_t bits, uint32_t groups) {
    return static_cast<uint32_t>((bits * groups) >> 15);
  }
  static uint8_t* GroupAt(const Segment* seg, uint32_t g) {
    return seg->block[g / kGroupsPerBlock] + (g % kGroupsPerBlock) * kGroupBytes;
  }
  static Slot* SlotsOf(uint8_t* group) { return reinterpret_cast<Slot*>(group + kGroupWidth); }
  // Directory entries a segment owns.
  size_t Span(const Segment* seg) const { return size_t{1} << (global_depth_ - seg->depth); }
  size_t DirectoryIndex(uint64_t hash) const {
    return global_depth_ == 0 ? 0 : static_cast<size_t>(hash >> (64 - global_depth_));
  }
  Segment* SegmentFor(uint64_t hash) const { return directory_[DirectoryIndex(hash)]; }

#if defined(__SSE2__)
  static uint32_t MatchTag(const uint8_t* ctrl, uint8_t tag) {
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ctrl));
    return static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(c, _mm_set1_epi8(static_cast<char>(tag)))));
  }
  static uint32_t MatchEmpty(const uint8_t* ctrl) { return MatchTag(ctrl, kEmpty); }
  // Empty or deleted: the only control bytes with the high bit set.
  static uint32_t MatchFree(const uint8_t* ctrl) {
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ctrl));
    return static_cast<uint32_t>(_mm_movemask_epi8(c));
  }
#else
  static uint32_t MatchTag(const uint8_t* ctrl, uint8_t tag) {
    uint32_t m = 0;
    for (int i = 0; i < kGroupWidth; ++i) m |= uint32_t{ctrl[i] == tag} << i;
    return m;
  }
  static uint32_t MatchEmpty(const uint8_t* ctrl) { return MatchTag(ctrl, kEmpty); }
  static uint32_t MatchFree(const uint8_t* ctrl) {
    uint32_t m = 0;
    for (int i = 0; i < kGroupWidth; ++i) m |= uint32_t{(ctrl[i] & 0x80) != 0} << i;
    return m;
  }
#endif
  static uint32_t MatchFull(const uint8_t* ctrl) { return ~MatchFree(ctrl) & 0xFFFF; }

  template <class F>
  static void ForEachInSegment(const Segment* seg, F&& f) {
    const uint32_t groups = GroupCount(seg);
    for (uint32_t g = 0; g < groups; ++g) {
      uint8_t* group = GroupAt(seg, g);
      for (uint32_t m = MatchFull(group); m != 0; m &= m - 1) {
        int i = std::countr_zero(m);
        f(group, i, &SlotsOf(group)[i]);
      }
    }
  }

  Segment* NewSegment(uint32_t blocks, uint8_t depth, uint32_t prefix);
  void FreeSegment(Segment* seg);
  void AllocateBlocks(Segment* seg, uint32_t blocks);
  void FreeBlocks(Segment* seg);
  static uint32_t BlocksFor(uint32_t entries);
  // Places an entry in a segment known to have room; returns its slot.
  static Slot* Place(Segment* seg, uint8_t tag, Slot slot);
  void Grow(Segment* seg);
  void Rebuild(Segment* seg, uint32_t blocks);
  void Split(Segment* seg);
  void EraseAt(Segment* seg, uint8_t* group, int index);
  Segment* SegmentAtPrefix(uint32_t prefix26) const {
    return directory_[prefix26 >> (kMaxDepth - global_depth_)];
  }

  SlabAllocator* slab_;
  RehashFn rehash_;
  const void* context_;
  std::vector<Segment*> directory_;
  int global_depth_ = 0;
  size_t size_ = 0;
  size_t segment_count_ = 0;
  size_t total_blocks_ = 0;
  uint64_t sweep_prefix_ = 0;  // 26-bit prefix of the segment the sweep is in
  uint32_t sweep_group_ = 0;
  struct Moving {
    uint8_t tag;
    Slot slot;
  };
  std::vector<Moving> moving_;                    // scratch for rebuilds and splits
  std::vector<uint8_t> split_side_;               // scratch for splits
  std::vector<std::pair<uint32_t, Slot*>> scan_;  // scratch for Scan
};

template <class F>
uint64_t DashTable::Scan(uint64_t cursor, size_t count, F&& f) {
  // Cursor layout: p (26 bits) << 21 | r (5 bits) << 16 | t (16 bits). A returned cursor always
  // has region_t == t, so one field holds both, and cursors stay below 2^47: the shard index of
  // a SCAN cursor fits beside them (commands/plan.h).
  uint32_t t = cursor & 0xFFFF;
  uint32_t region_t = t;
  uint32_t r = (cursor >> 16) & 0x1F;
  uint32_t p = static_cast<uint32_t>((cursor >> 21) & ((uint64_t{1} << kMaxDepth) - 1));
  size_t visited = 0;
  for (;;) {
    Segment* seg = SegmentAtPrefix(p);
    const uint32_t seg_width = 1u << (kMaxDepth - seg->depth);
    const uint32_t seg_lo = seg->prefix << (kMaxDepth - seg->depth);
    if (seg_lo != p) {
      // Only after Clear (or with a forged cursor): restart this segment from its beginning.
      p = seg_lo;
      t = region_t = 0;
    }
    if (t == 0 && region_t == 0) r = seg->depth;
    if (r > seg->depth) r = seg->depth;
    scan_.clear();
    ForEachInSegment(seg, [&](uint8_t*, int, Slot* slot) {
      uint32_t bits = static_cast<uint32_t>(*slot >> kBitsShift);
      if (bits >= t) scan_.emplace_back(bits, slot);
    });
    const size_t want = count > visited ? count - visited : 1;
    // Only a segment that is its whole region is cut part-way: cutting a part of a split region
    // would need a second threshold in the cursor, so such a part is finished in one call.
    if (scan_.size() > want && r == seg->depth) {
      // Stop part-way: visit everything up to the want-th smallest bits value (equal values
      // together, so the position can resume strictly after it).
      std::nth_element(scan_.begin(), scan_.begin() + (want - 1), scan_.end());
      uint32_t cut = scan_[want - 1].first;
      for (auto& [bits, slot] : scan_) {
        if (bits <= cut) f(slot);
      }
      if (cut + 1 < kBitsRange) {
        // A later split of this segment resumes both halves here.
        region_t = cut + 1;
        return (uint64_t{p} << 21) | (uint64_t{r} << 16) | region_t;
      }
    } else {
      for (auto& [bits, slot] : scan_) f(slot);
    }
    visited += scan_.size();
    // This segment is done; move on inside the region or to the next region.
    const uint32_t region_hi = (p & ~((1u << (kMaxDepth - r)) - 1)) + (1u << (kMaxDepth - r));
    uint32_t next = p + seg_width;
    if (next >= region_hi) {
      if (region_hi == (1u << kMaxDepth)) return 0;
      region_t = 0;
      r = 0;
    }
    t = region_t;
    p = next;
    if (visited >= count) {
      return (uint64_t{p} << 21) | (uint64_t{r} << 16) | t;
    }
  }
}

template <class F>
size_t DashTable::Sweep(size_t budget, F&& f, bool* wrapped) {
  size_t erased = 0;
  *wrapped = false;
  while (budget > 0) {
    Segment* seg = SegmentAtPrefix(static_cast<uint32_t>(sweep_prefix_));
    const uint32_t groups = GroupCount(seg);
    while (sweep_group_ < groups && budget > 0) {
      uint8_t* group = GroupAt(seg, sweep_group_);
      --budget;
      Slot* slots = SlotsOf(group);
      const uint32_t full = MatchFull(group);
      // Each visit reads its record (the deadline): start every record of the group loading, and
      // the next group, before looking at any, so the misses overlap instead of queueing.
      if (sweep_group_ + 1 < groups) {
        const uint8_t* next = GroupAt(seg, sweep_group_ + 1);
        Prefetch(next);
        Prefetch(next + 64);
        Prefetch(next + 128);
      }
      for (uint32_t m = full; m != 0; m &= m - 1) {
        const Slot slot = slots[std::countr_zero(m)];
        if ((slot & kExpiryBit) != 0) Prefetch(Pointer(slot));
      }
      // A group is always finished, so the budget can be overshot by at most one group.
      for (uint32_t m = full; m != 0; m &= m - 1) {
        int i = std::countr_zero(m);
        if ((slots[i] & kExpiryBit) == 0) continue;
        if (budget > 0) --budget;
        if (f(slots[i])) {
          EraseAt(seg, group, i);
          ++erased;
        }
      }
      ++sweep_group_;
    }
    if (sweep_group_ < groups) break;
    sweep_group_ = 0;
    const uint32_t seg_lo = seg->prefix << (kMaxDepth - seg->depth);
    sweep_prefix_ = seg_lo + (uint64_t{1} << (kMaxDepth - seg->depth));
    if (sweep_prefix_ >= (uint64_t{1} << kMaxDepth)) {
      sweep_prefix_ = 0;
      *wrapped = true;
      break;
    }
  }
  return erased;
}

}  // namespace keep::core
