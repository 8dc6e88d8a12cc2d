#include "dataplane/core/dash_table.h"

#include <cstdio>
#include <cstdlib>

namespace keep::core {

DashTable::DashTable(SlabAllocator* slab, RehashFn rehash, const void* context)
    : slab_(slab), rehash_(rehash), context_(context) {
  directory_.push_back(NewSegment(1, 0, 0));
  segment_count_ = 1;
  moving_.reserve(kMaxBlocks * kSlotsPerBlock);
  split_side_.reserve(kMaxBlocks * kSlotsPerBlock);
  scan_.reserve(kMaxBlocks * kSlotsPerBlock);
}

DashTable::~DashTable() {
  for (size_t i = 0; i < directory_.size(); i += Span(directory_[i])) FreeSegment(directory_[i]);
}

size_t DashTable::table_bytes() const {
  return total_blocks_ * SlabAllocator::ClassSize(kBlockBytes) +
         segment_count_ * SlabAllocator::ClassSize(sizeof(Segment));
}

void DashTable::Clear() {
  for (size_t i = 0; i < directory_.size(); i += Span(directory_[i])) FreeSegment(directory_[i]);
  directory_.assign(1, NewSegment(1, 0, 0));
  directory_.shrink_to_fit();
  global_depth_ = 0;
  size_ = 0;
  segment_count_ = 1;
  sweep_prefix_ = 0;
  sweep_group_ = 0;
}

void DashTable::Forget() {
  directory_.clear();
  total_blocks_ = 0;
  segment_count_ = 0;
  size_ = 0;
}

DashTable::Segment* DashTable::NewSegment(uint32_t blocks, uint8_t depth, uint32_t prefix) {
  auto* seg = static_cast<Segment*>(slab_->Allocate(sizeof(Segment)));
  std::memset(seg, 0, sizeof(Segment));
  seg->depth = depth;
  seg->prefix = prefix;
  AllocateBlocks(seg, blocks);
  return seg;
}

void DashTable::FreeSegment(Segment* seg) {
  FreeBlocks(seg);
  slab_->Free(seg, sizeof(Segment));
}

void DashTable::AllocateBlocks(Segment* seg, uint32_t blocks) {
  seg->blocks = static_cast<uint8_t>(blocks);
  for (uint32_t b = 0; b < blocks; ++b) {
    auto* block = static_cast<uint8_t*>(slab_->Allocate(kBlockBytes));
    for (int g = 0; g < kGroupsPerBlock; ++g) {
      std::memset(block + g * kGroupBytes, kEmpty, kGroupWidth);
    }
    seg->block[b] = block;
  }
  total_blocks_ += blocks;
  seg->size = 0;
  seg->deleted = 0;
}

void DashTable::FreeBlocks(Segment* seg) {
  for (uint32_t b = 0; b < seg->blocks; ++b) slab_->Free(seg->block[b], kBlockBytes);
  total_blocks_ -= seg->blocks;
  seg->blocks = 0;
}

uint32_t DashTable::BlocksFor(uint32_t entries) {
  return std::min<uint32_t>(kMaxBlocks, entries / kLoadPerBlock + 1);
}

DashTable::Slot* DashTable::Place(Segment* seg, uint8_t tag, Slot slot) {
  const uint32_t groups = GroupCount(seg);
  uint32_t g = Home(slot >> kBitsShift, groups);
  for (;;) {
    uint8_t* group = GroupAt(seg, g);
    uint32_t m = MatchFree(group);
    if (m != 0) {
      int i = std::countr_zero(m);
      if (group[i] == kDeleted) --seg->deleted;
      group[i] = tag;
      Slot* s = &SlotsOf(group)[i];
      *s = slot;
      ++seg->size;
      return s;
    }
    if (++g == groups) g = 0;
  }
}

DashTable::Slot* DashTable::Insert(uint64_t hash, Slot payload) {
  Segment* seg = SegmentFor(hash);
  while (seg->size + seg->deleted >= Threshold(seg)) {
    Grow(seg);
    seg = SegmentFor(hash);
  }
  ++size_;
  return Place(
      seg, hash & 0x7F,
      (payload & ~(uint64_t{0x7FFF} << kBitsShift)) | (uint64_t{SlotBits(hash)} << kBitsShift));
}

void DashTable::Grow(Segment* seg) {
  const uint32_t capacity = seg->blocks * kSlotsPerBlock;
  if (seg->deleted * 16 >= capacity) {
    // Enough tombstones that rebuilding in place (or smaller) makes room.
    Rebuild(seg, std::max<uint32_t>(BlocksFor(seg->size), 1));
  } else if (seg->blocks < kMaxBlocks) {
    Rebuild(seg, seg->blocks + 1);
  } else {
    Split(seg);
  }
}

void DashTable::Rebuild(Segment* seg, uint32_t blocks) {
  moving_.clear();
  ForEachInSegment(seg, [&](uint8_t* group, int i, Slot* slot) {
    moving_.push_back({group[i], *slot});
  });
  FreeBlocks(seg);
  AllocateBlocks(seg, blocks);
  for (const Moving& m : moving_) Place(seg, m.tag, m.slot);
}

void DashTable::Split(Segment* seg) {
  if (seg->depth >= kMaxDepth) {
    // 2^26 full segments is about 60 billion keys; a hash this skewed means a broken hash.
    std::fprintf(stderr, "keep: hash table segment at maximum depth\n");
    std::abort();
  }
  if (seg->depth == global_depth_) {
    // Double the directory: every entry becomes two adjacent ones.
    std::vector<Segment*> bigger(directory_.size() * 2);
    for (size_t i = 0; i < bigger.size(); ++i) bigger[i] = directory_[i / 2];
    directory_.swap(bigger);
    ++global_depth_;
  }
  moving_.clear();
  ForEachInSegment(seg, [&](uint8_t* group, int i, Slot* slot) {
    moving_.push_back({group[i], *slot});
  });
  // Records are scattered, so fetch a few ahead while hashing.
  constexpr size_t kAhead = 8;
  const int bit = 63 - seg->depth;
  split_side_.resize(moving_.size());
  uint32_t high = 0;
  for (size_t i = 0; i < moving_.size(); ++i) {
    if (i + kAhead < moving_.size()) __builtin_prefetch(Pointer(moving_[i + kAhead].slot));
    uint8_t side = (rehash_(context_, moving_[i].slot) >> bit) & 1;
    split_side_[i] = side;
    high += side;
  }
  const uint32_t low = static_cast<uint32_t>(moving_.size()) - high;
  const uint8_t depth = seg->depth + 1;
  Segment* upper = NewSegment(BlocksFor(high), depth, seg->prefix * 2 + 1);
  const size_t span = Span(seg);
  const size_t first = size_t{seg->prefix} << (global_depth_ - seg->depth);
  FreeBlocks(seg);
  AllocateBlocks(seg, BlocksFor(low));
  seg->depth = depth;
  seg->prefix = seg->prefix * 2;
  for (size_t i = 0; i < moving_.size(); ++i) {
    Place(split_side_[i] ? upper : seg, moving_[i].tag, moving_[i].slot);
  }
  for (size_t i = first + span / 2; i < first + span; ++i) directory_[i] = upper;
  ++segment_count_;
}

void DashTable::EraseAt(Segment* seg, uint8_t* group, int index) {
  // A group that still has an empty slot never turned a probe away, so no probe sequence runs
  // through it and the slot can become empty; otherwise it must stay a tombstone.
  if (MatchEmpty(group) != 0) {
    group[index] = kEmpty;
  } else {
    group[index] = kDeleted;
    ++seg->deleted;
  }
  --seg->size;
  --size_;
}

void DashTable::Erase(uint64_t hash, Slot* slot) {
  Segment* seg = SegmentFor(hash);
  auto* address = reinterpret_cast<uint8_t*>(slot);
  for (uint32_t b = 0; b < seg->blocks; ++b) {
    uint8_t* block = seg->block[b];
    if (address >= block && address < block + kBlockBytes) {
      size_t offset = static_cast<size_t>(address - block);
      uint8_t* group = block + (offset / kGroupBytes) * kGroupBytes;
      int index = static_cast<int>((address - group - kGroupWidth) / sizeof(Slot));
      EraseAt(seg, group, index);
      return;
    }
  }
  std::fprintf(stderr, "keep: DashTable::Erase of a slot outside its segment\n");
  std::abort();
}

DashTable::Slot* DashTable::RandomSlot(uint64_t random) const {
  if (size_ == 0) return nullptr;
  // Segments are picked through the directory, so a shallow segment (more entries) is picked
  // proportionally more often; inside it, a random group and a random full slot from there on.
  size_t start = static_cast<size_t>(random % directory_.size());
  for (size_t n = 0; n < directory_.size(); ++n) {
    const Segment* seg = directory_[(start + n) % directory_.size()];
    if (seg->size == 0) continue;
    const uint32_t groups = GroupCount(seg);
    uint32_t g = static_cast<uint32_t>((random >> 32) % groups);
    for (uint32_t k = 0; k < groups; ++k) {
      uint8_t* group = GroupAt(seg, (g + k) % groups);
      uint32_t m = MatchFull(group);
      if (m == 0) continue;
      int skip = static_cast<int>((random >> 56) % static_cast<uint64_t>(std::popcount(m)));
      while (skip-- > 0) m &= m - 1;
      return &SlotsOf(group)[std::countr_zero(m)];
    }
  }
  return nullptr;
}

}  // namespace keep::core
