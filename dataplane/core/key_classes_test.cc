#include "dataplane/core/key_classes.h"

#include <gtest/gtest.h>

namespace keep::core {
namespace {

TEST(KeyClassesTest, DefaultTableIsOneLruClass) {
  KeyClassTable table;
  ASSERT_EQ(table.size(), 1u);
  EXPECT_EQ(table.NameOf(0), "default");
  EXPECT_EQ(table.PolicyOf(0), EvictionPolicy::kLru);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(table.ClassOfByte(static_cast<uint8_t>(b)), 0);
  EXPECT_EQ(table.ClassOf(""), 0);
  EXPECT_TRUE(table.AnyEvictable());
}

TEST(KeyClassesTest, ByteSets) {
  std::bitset<256> bytes;
  EXPECT_EQ(ParseByteSet("s", &bytes), "");
  EXPECT_EQ(bytes.count(), 1u);
  EXPECT_TRUE(bytes.test('s'));

  EXPECT_EQ(ParseByteSet("a-f", &bytes), "");
  EXPECT_EQ(bytes.count(), 6u);
  EXPECT_TRUE(bytes.test('a') && bytes.test('f') && !bytes.test('g'));

  EXPECT_EQ(ParseByteSet("0-9,_", &bytes), "");
  EXPECT_EQ(bytes.count(), 11u);
  EXPECT_TRUE(bytes.test('_') && bytes.test('5'));

  EXPECT_EQ(ParseByteSet("\\x00-\\x1f", &bytes), "");
  EXPECT_EQ(bytes.count(), 32u);
  EXPECT_TRUE(bytes.test(0) && bytes.test(0x1f) && !bytes.test(0x20));

  EXPECT_EQ(ParseByteSet("\\xFF,\\x2c,\\x2d", &bytes), "");
  EXPECT_TRUE(bytes.test(0xff) && bytes.test(',') && bytes.test('-'));
  EXPECT_EQ(bytes.count(), 3u);

  // Bytes above 0x7f written as themselves (UTF-8 lead bytes, say).
  EXPECT_EQ(ParseByteSet("\xc3", &bytes), "");
  EXPECT_TRUE(bytes.test(0xc3));

  for (const char* bad : {"", ",", "a,", ",a", "a-", "-a", "f-a", "ab", "\\x", "\\x1", "\\xg0",
                          "\\y00", "a--b", "a-,b"}) {
    EXPECT_NE(ParseByteSet(bad, &bytes), "") << bad;
  }
}

TEST(KeyClassesTest, PolicyNames) {
  EvictionPolicy policy;
  for (auto [name, expected] : {std::pair{"lru", EvictionPolicy::kLru},
                                {"ttl", EvictionPolicy::kTtl},
                                {"none", EvictionPolicy::kNone},
                                {"pinned", EvictionPolicy::kPinned}}) {
    ASSERT_TRUE(ParsePolicy(name, &policy));
    EXPECT_EQ(policy, expected);
    EXPECT_EQ(PolicyName(policy), name);
  }
  EXPECT_FALSE(ParsePolicy("LRU", &policy));
  EXPECT_FALSE(ParsePolicy("allkeys-lru", &policy));
}

TEST(KeyClassesTest, BuildsTheLookup) {
  KeyClassTable table;
  std::string error;
  ASSERT_TRUE(KeyClassTable::Build({{"session", "s", "ttl"},
                                    {"config", "c", "pinned"},
                                    {"ledger", "0-9,_", "none"},
                                    {"default", "", "ttl"}},
                                   &table, &error))
      << error;
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(table.NameOf(table.ClassOf("s:1")), "session");
  EXPECT_EQ(table.PolicyOf(table.ClassOf("s:1")), EvictionPolicy::kTtl);
  EXPECT_EQ(table.NameOf(table.ClassOf("cfg")), "config");
  EXPECT_EQ(table.NameOf(table.ClassOf("7")), "ledger");
  EXPECT_EQ(table.NameOf(table.ClassOf("_x")), "ledger");
  EXPECT_EQ(table.NameOf(table.ClassOf("user")), "default");
  EXPECT_EQ(table.PolicyOf(table.ClassOf("user")), EvictionPolicy::kTtl);
  EXPECT_EQ(table.ClassOf(""), KeyClassTable::kDefaultClass);
}

TEST(KeyClassesTest, RejectsBadTables) {
  KeyClassTable table;
  std::string error;
  EXPECT_FALSE(KeyClassTable::Build({{"", "a", "lru"}}, &table, &error));
  EXPECT_NE(error.find("empty name"), std::string::npos) << error;

  EXPECT_FALSE(KeyClassTable::Build({{"a", "a", "allkeys-lru"}}, &table, &error));
  EXPECT_NE(error.find("unknown policy 'allkeys-lru'"), std::string::npos) << error;

  EXPECT_FALSE(KeyClassTable::Build({{"a", "a-f", "lru"}, {"b", "e-z", "ttl"}}, &table, &error));
  EXPECT_NE(error.find("overlap"), std::string::npos) << error;
  EXPECT_NE(error.find("'b'"), std::string::npos) << error;
  EXPECT_NE(error.find("'a'"), std::string::npos) << error;

  EXPECT_FALSE(KeyClassTable::Build({{"a", "a", "lru"}, {"a", "b", "lru"}}, &table, &error));
  EXPECT_NE(error.find("twice"), std::string::npos) << error;

  EXPECT_FALSE(KeyClassTable::Build({{"a", "z-a", "lru"}}, &table, &error));
  EXPECT_NE(error.find("'a'"), std::string::npos) << error;

  EXPECT_FALSE(KeyClassTable::Build({{"default", "a", "lru"}}, &table, &error));

  // A failed build leaves the table as it was.
  EXPECT_EQ(table.size(), 1u);
}

TEST(KeyClassesTest, AnyEvictable) {
  KeyClassTable table;
  std::string error;
  ASSERT_TRUE(
      KeyClassTable::Build({{"default", "", "none"}, {"p", "p", "pinned"}}, &table, &error));
  EXPECT_FALSE(table.AnyEvictable());
  ASSERT_TRUE(KeyClassTable::Build({{"default", "", "none"}, {"t", "t", "ttl"}}, &table, &error));
  EXPECT_TRUE(table.AnyEvictable());
}

}  // namespace
}  // namespace keep::core
