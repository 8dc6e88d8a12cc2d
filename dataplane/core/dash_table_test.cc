#include "dataplane/core/dash_table.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dataplane/core/chunk_pool.h"
#include "dataplane/core/slab_allocator.h"

namespace keep::core {
namespace {

// g++ 12 warns falsely (-Wrestrict) about "literal" + std::string, hence this.
std::string K(const char* prefix, long i) {
  char buf[32];
  return std::string(buf, static_cast<size_t>(std::snprintf(buf, sizeof(buf), "%s%ld", prefix, i)));
}

// The table only sees pointers; here they point at std::strings owned by the test.
class DashTableTest : public ::testing::Test {
 protected:
  static uint64_t Hash(const std::string& key) {
    return XXH3_64bits_withSeed(key.data(), key.size(), 42);
  }
  static uint64_t Rehash(const void*, DashTable::Slot slot) {
    return Hash(*static_cast<const std::string*>(DashTable::Pointer(slot)));
  }
  static const std::string& KeyOf(DashTable::Slot slot) {
    return *static_cast<const std::string*>(DashTable::Pointer(slot));
  }

  DashTable::Slot* Find(const std::string& key) {
    return table_.Find(Hash(key), [&](DashTable::Slot s) { return KeyOf(s) == key; });
  }
  void Insert(const std::string& key, bool expiry = false) {
    auto owned = std::make_unique<std::string>(key);
    uint64_t payload =
        reinterpret_cast<uintptr_t>(owned.get()) | (expiry ? DashTable::kExpiryBit : 0);
    table_.Insert(Hash(key), payload);
    keys_[key] = std::move(owned);
  }
  bool Erase(const std::string& key) {
    DashTable::Slot* slot = Find(key);
    if (slot == nullptr) return false;
    table_.Erase(Hash(key), slot);
    keys_.erase(key);
    return true;
  }

  ChunkPool pool_;
  SlabAllocator slab_{&pool_};
  DashTable table_{&slab_, &Rehash, nullptr};
  std::map<std::string, std::unique_ptr<std::string>> keys_;
};

TEST_F(DashTableTest, InsertFindEraseAcrossGrowth) {
  constexpr int kKeys = 200000;
  for (int i = 0; i < kKeys; ++i) {
    std::string key = K("k", i);
    ASSERT_EQ(Find(key), nullptr);
    Insert(key);
    ASSERT_NE(Find(key), nullptr);
  }
  EXPECT_EQ(table_.size(), static_cast<size_t>(kKeys));
  EXPECT_GT(table_.segment_count(), 100u);
  const double load = static_cast<double>(kKeys) / table_.slot_capacity();
  EXPECT_GT(load, 0.7);
  EXPECT_LE(load, 0.875);
  for (int i = 0; i < kKeys; ++i) {
    DashTable::Slot* slot = Find(K("k", i));
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(KeyOf(*slot), K("k", i));
  }
  for (int i = 0; i < kKeys; i += 2) ASSERT_TRUE(Erase(K("k", i)));
  EXPECT_EQ(table_.size(), static_cast<size_t>(kKeys / 2));
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_EQ(Find(K("k", i)) != nullptr, i % 2 == 1) << i;
  }
  // Churn with tombstones: the table must stay correct and not grow without bound.
  size_t capacity = table_.slot_capacity();
  std::mt19937_64 rng(1);
  for (int round = 0; round < 400000; ++round) {
    std::string key = K("c", rng() % 50000);
    if (Find(key) != nullptr) {
      Erase(key);
    } else {
      Insert(key);
    }
  }
  for (auto& [key, owned] : keys_) ASSERT_NE(Find(key), nullptr) << key;
  EXPECT_EQ(table_.size(), keys_.size());
  EXPECT_LT(table_.slot_capacity(), capacity * 2);
}

TEST_F(DashTableTest, ScanVisitsEachKeyExactlyOnceWithoutInserts) {
  for (int i = 0; i < 30000; ++i) Insert(K("s", i));
  for (size_t count : {1, 10, 100, 5000}) {
    std::map<std::string, int> seen;
    uint64_t cursor = 0;
    int calls = 0;
    do {
      cursor = table_.Scan(cursor, count, [&](DashTable::Slot* s) { ++seen[KeyOf(*s)]; });
      ++calls;
    } while (cursor != 0);
    EXPECT_EQ(seen.size(), keys_.size()) << count;
    for (auto& [key, n] : seen) ASSERT_EQ(n, 1) << key << " count " << count;
    if (count == 10) {
      EXPECT_GT(calls, 1000);
    }
  }
}

TEST_F(DashTableTest, ScanSurvivesGrowthDuringTheWalk) {
  for (int i = 0; i < 5000; ++i) Insert(K("a", i));
  const size_t segments_before = table_.segment_count();
  std::set<std::string> original;
  for (auto& [key, owned] : keys_) original.insert(key);
  std::map<std::string, int> seen;
  uint64_t cursor = 0;
  int next = 0;
  do {
    cursor = table_.Scan(cursor, 7, [&](DashTable::Slot* s) { ++seen[KeyOf(*s)]; });
    // Grow a lot while walking: splits and directory doublings happen mid-walk.
    for (int i = 0; i < 10; ++i) Insert(K("b", next++));
  } while (cursor != 0);
  EXPECT_GE(table_.segment_count(), 2 * segments_before);  // splits happened mid-walk
  for (const std::string& key : original) {
    ASSERT_TRUE(seen.count(key)) << key;
    EXPECT_EQ(seen[key], 1) << key;  // this scheme even keeps exactly-once under growth
  }
}

TEST_F(DashTableTest, ScanToleratesErasingTheVisitedSlot) {
  for (int i = 0; i < 3000; ++i) Insert(K("e", i));
  uint64_t cursor = 0;
  do {
    cursor = table_.Scan(cursor, 50, [&](DashTable::Slot* s) {
      std::string key = KeyOf(*s);
      table_.Erase(Hash(key), s);
      keys_.erase(key);
    });
  } while (cursor != 0);
  EXPECT_EQ(table_.size(), 0u);
}

TEST_F(DashTableTest, SweepSeesOnlyExpiringSlots) {
  for (int i = 0; i < 20000; ++i) Insert(K("x", i), i % 4 == 0);
  size_t seen = 0;
  bool wrapped = false;
  size_t erased = 0;
  int calls = 0;
  while (!wrapped) {
    erased += table_.Sweep(
        100,
        [&](DashTable::Slot s) {
          EXPECT_TRUE(s & DashTable::kExpiryBit);
          ++seen;
          std::string key = KeyOf(s);
          const bool odd = std::stoi(key.substr(1)) % 8 == 4;
          if (odd) keys_.erase(key);
          return odd;
        },
        &wrapped);
    ++calls;
  }
  EXPECT_EQ(seen, 5000u);
  EXPECT_EQ(erased, 2500u);
  EXPECT_GT(calls, 20);  // the budget bounds each call
  EXPECT_EQ(table_.size(), 17500u);
  for (auto& [key, owned] : keys_) ASSERT_NE(Find(key), nullptr);
}

TEST_F(DashTableTest, RandomSlotCoversTheTable) {
  EXPECT_EQ(table_.RandomSlot(1), nullptr);
  for (int i = 0; i < 1000; ++i) Insert(K("r", i));
  std::set<std::string> seen;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    DashTable::Slot* s = table_.RandomSlot(rng());
    ASSERT_NE(s, nullptr);
    seen.insert(KeyOf(*s));
  }
  EXPECT_GT(seen.size(), 900u);
}

TEST_F(DashTableTest, ClearStartsOver) {
  for (int i = 0; i < 10000; ++i) Insert(K("z", i));
  table_.Clear();
  keys_.clear();
  EXPECT_EQ(table_.size(), 0u);
  EXPECT_EQ(table_.segment_count(), 1u);
  EXPECT_EQ(Find("z1"), nullptr);
  Insert("z1");
  EXPECT_NE(Find("z1"), nullptr);
}

}  // namespace
}  // namespace keep::core
