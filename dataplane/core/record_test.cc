#include "dataplane/core/record.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace keep::core::record {
namespace {

TEST(RecordTest, SmallRecordIsHeaderKeyValue) {
  std::vector<uint8_t> buf(64);
  uint8_t* r = buf.data();
  WriteHeader(r, 0, 7, 11, 13);
  std::memcpy(r + HeaderSize(r[0]), "key:1234567", 11);
  std::memcpy(ValueBytes(r), "value:1234567", 13);
  EXPECT_EQ(Size(r), 28u);
  EXPECT_EQ(Key(r), "key:1234567");
  EXPECT_EQ(std::string_view(reinterpret_cast<char*>(ValueBytes(r)), ValueField(r)),
            "value:1234567");
  EXPECT_EQ(r[1], 7);
}

TEST(RecordTest, LongFormAndExpiry) {
  std::string key(300, 'k');
  std::vector<uint8_t> buf(400);
  uint8_t* r = buf.data();
  uint8_t flags = kLong | kHasExpiry;
  WriteHeader(r, flags, 0, 300, 2);
  SetDeadline(r, 1'700'000'000'123);
  std::memcpy(r + HeaderSize(flags), key.data(), key.size());
  EXPECT_EQ(Size(r), kLongHeader + kExpiryBytes + 300 + 2);
  EXPECT_EQ(Key(r), key);
  EXPECT_EQ(Deadline(r), 1'700'000'000'123);
  EXPECT_TRUE(NeedsLong(256, 0));
  EXPECT_TRUE(NeedsLong(0, 256));
  EXPECT_FALSE(NeedsLong(255, 255));
}

TEST(RecordTest, IntegersRoundTrip) {
  for (int64_t v : std::vector<int64_t>{0, 1, -1, 127, -128, 128, 12345, -40000, 1ll << 40,
                                        std::numeric_limits<int64_t>::max(),
                                        std::numeric_limits<int64_t>::min()}) {
    uint8_t buf[8];
    uint32_t width = IntegerWidth(v);
    StoreInteger(buf, v, width);
    EXPECT_EQ(LoadInteger(buf, width), v);
    char text[24];
    size_t n = FormatInteger(v, text);
    int64_t parsed;
    EXPECT_TRUE(ParseCanonicalInteger({text, n}, &parsed));
    EXPECT_EQ(parsed, v);
    EXPECT_LE(width, n);
  }
  EXPECT_EQ(IntegerWidth(12345), 2u);
  int64_t v;
  for (const char* bad : {"", "-", "01", "-0", "+1", " 1", "1 ", "1a", "9223372036854775808",
                          "-9223372036854775809", "00", "value:1"}) {
    EXPECT_FALSE(ParseCanonicalInteger(bad, &v)) << bad;
  }
}

// SameKey compares keys of 8-16 bytes as two overlapping words: a difference in any byte, at any
// length, and a difference of length alone must all count.
TEST(RecordTest, SameKeySeesEveryByte) {
  for (size_t length = 0; length <= 40; ++length) {
    const std::string key(length, 'k');
    EXPECT_TRUE(SameKey(key, std::string(length, 'k')));
    EXPECT_FALSE(SameKey(key, std::string(length + 1, 'k')));
    if (length > 0) {
      EXPECT_FALSE(SameKey(key, std::string(length - 1, 'k')));
    }
    for (size_t at = 0; at < length; ++at) {
      for (char other : {'\0', 'j', 'l', '\xff', 'k'}) {
        std::string changed = key;
        changed[at] = other;
        EXPECT_EQ(SameKey(key, changed), other == 'k') << length << " " << at;
      }
    }
  }
  EXPECT_TRUE(SameKey(std::string_view(), std::string_view()));
}

}  // namespace
}  // namespace keep::core::record
