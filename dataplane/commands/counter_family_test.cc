#include <string>

#include "dataplane/commands/string_util.h"
#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

using resp::Bulk;
using resp::Err;
using resp::Int;
using resp::kOk;

const std::string kNotInteger = Err("ERR value is not an integer or out of range");
const std::string kOverflow = Err("ERR increment or decrement would overflow");
const std::string kNotFloat = Err("ERR value is not a valid float");
const std::string kNanOrInf = Err("ERR increment would produce NaN or Infinity");

class CounterFamilyTest : public CommandFixture {};

TEST_F(CounterFamilyTest, IncrCreatesAndCounts) {
  EXPECT_EQ(Run({"INCR", "n"}), Int(1));
  EXPECT_EQ(Run({"INCR", "n"}), Int(2));
  EXPECT_EQ(Run({"GET", "n"}), Bulk("2"));
  EXPECT_EQ(Run({"DECR", "n"}), Int(1));
  EXPECT_EQ(Run({"DECR", "n"}), Int(0));
  EXPECT_EQ(Run({"DECR", "n"}), Int(-1));
  EXPECT_EQ(Run({"GET", "n"}), Bulk("-1"));
  EXPECT_EQ(Run({"DECR", "fresh"}), Int(-1));
}

TEST_F(CounterFamilyTest, IncrOnValueSetWithSet) {
  EXPECT_EQ(Run({"SET", "n", "100"}), kOk);
  EXPECT_EQ(Run({"INCR", "n"}), Int(101));
  EXPECT_EQ(Run({"SET", "n", "17179869184"}), kOk);
  EXPECT_EQ(Run({"INCR", "n"}), Int(17179869185));
  EXPECT_EQ(Run({"SET", "n", "-9223372036854775808"}), kOk);
  EXPECT_EQ(Run({"INCR", "n"}), Int(-9223372036854775807));
  EXPECT_EQ(Run({"GET", "n"}), Bulk("-9223372036854775807"));
}

TEST_F(CounterFamilyTest, IncrByAndDecrBy) {
  EXPECT_EQ(Run({"SET", "n", "17179869184"}), kOk);
  EXPECT_EQ(Run({"INCRBY", "n", "17179869184"}), Int(34359738368));
  EXPECT_EQ(Run({"SET", "n", "17179869184"}), kOk);
  EXPECT_EQ(Run({"DECRBY", "n", "17179869185"}), Int(-1));
  EXPECT_EQ(Run({"DECRBY", "missing", "1"}), Int(-1));
  EXPECT_EQ(Run({"INCRBY", "other", "-5"}), Int(-5));
  EXPECT_EQ(Run({"DECRBY", "other", "-5"}), Int(0));
  EXPECT_EQ(Run({"INCRBY", "other", "0"}), Int(0));
}

TEST_F(CounterFamilyTest, RejectsNonIntegers) {
  for (std::string value :
       {"abc", "    11", "11    ", "    11    ", "011", "+1", "-0", "1.5", "", "1e3", "0x10",
        "9223372036854775808", "-9223372036854775809", "123456789012345678901"}) {
    EXPECT_EQ(Run({"SET", "n", value}), kOk);
    EXPECT_EQ(Run({"INCR", "n"}), kNotInteger) << "value '" << value << "'";
    EXPECT_EQ(Run({"GET", "n"}), Bulk(value));
  }
  EXPECT_EQ(Run({"SET", "z", "0"}), kOk);
  EXPECT_EQ(Run({"INCR", "z"}), Int(1));
}

TEST_F(CounterFamilyTest, RejectsNonIntegerIncrements) {
  EXPECT_EQ(Run({"INCRBY", "n", "1.5"}), kNotInteger);
  EXPECT_EQ(Run({"INCRBY", "n", ""}), kNotInteger);
  EXPECT_EQ(Run({"INCRBY", "n", " 1"}), kNotInteger);
  EXPECT_EQ(Run({"INCRBY", "n", "9223372036854775808"}), kNotInteger);
  EXPECT_EQ(Run({"DECRBY", "n", "x"}), kNotInteger);
  // Nothing was created.
  EXPECT_EQ(Run({"EXISTS", "n"}), Int(0));
}

TEST_F(CounterFamilyTest, Overflow) {
  EXPECT_EQ(Run({"INCRBY", "n", "9223372036854775807"}), Int(9223372036854775807));
  EXPECT_EQ(Run({"INCR", "n"}), kOverflow);
  EXPECT_EQ(Run({"INCRBY", "n", "1"}), kOverflow);
  EXPECT_EQ(Run({"GET", "n"}), Bulk("9223372036854775807"));
  EXPECT_EQ(Run({"INCRBY", "n", "-9223372036854775808"}), Int(-1));

  EXPECT_EQ(Run({"INCRBY", "m", "-9223372036854775808"}), Int(INT64_MIN));
  EXPECT_EQ(Run({"DECR", "m"}), kOverflow);
  EXPECT_EQ(Run({"DECRBY", "m", "1"}), kOverflow);
  EXPECT_EQ(Run({"INCRBY", "m", "-1"}), kOverflow);
  EXPECT_EQ(Run({"GET", "m"}), Bulk("-9223372036854775808"));
  EXPECT_EQ(Run({"INCRBY", "m", "9223372036854775807"}), Int(-1));

  EXPECT_EQ(Run({"SET", "p", "1"}), kOk);
  EXPECT_EQ(Run({"INCRBY", "p", "9223372036854775807"}), kOverflow);
  EXPECT_EQ(Run({"SET", "q", "-2"}), kOk);
  EXPECT_EQ(Run({"DECRBY", "q", "9223372036854775807"}), kOverflow);
  EXPECT_EQ(Run({"DECRBY", "q", "9223372036854775806"}), Int(INT64_MIN));
}

TEST_F(CounterFamilyTest, DecrByMinimumIsRefused) {
  EXPECT_EQ(Run({"SET", "x", "0"}), kOk);
  EXPECT_EQ(Run({"DECRBY", "x", "-9223372036854775808"}), Err("ERR decrement would overflow"));
  EXPECT_EQ(Run({"DECRBY", "missing", "-9223372036854775808"}),
            Err("ERR decrement would overflow"));
  EXPECT_EQ(Run({"EXISTS", "missing"}), Int(0));
  EXPECT_EQ(Run({"DECRBY", "x", "-9223372036854775807"}), Int(9223372036854775807));
}

TEST_F(CounterFamilyTest, CountersKeepTtl) {
  EXPECT_EQ(Run({"SET", "n", "5", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"INCR", "n"}), Int(6));
  EXPECT_EQ(Run({"DECRBY", "n", "2"}), Int(4));
  EXPECT_EQ(Run({"INCRBYFLOAT", "n", "0.5"}), Bulk("4.5"));
  EXPECT_EQ(Run({"TTL", "n"}), Int(100));
  // Counting past the deadline starts over.
  AdvanceTime(100001);
  EXPECT_EQ(Run({"INCR", "n"}), Int(1));
  EXPECT_EQ(Run({"TTL", "n"}), Int(-1));
}

TEST_F(CounterFamilyTest, Arity) {
  EXPECT_EQ(Run({"INCR"}), Err("ERR wrong number of arguments for 'incr' command"));
  EXPECT_EQ(Run({"INCR", "a", "b"}), Err("ERR wrong number of arguments for 'incr' command"));
  EXPECT_EQ(Run({"DECR"}), Err("ERR wrong number of arguments for 'decr' command"));
  EXPECT_EQ(Run({"INCRBY", "a"}), Err("ERR wrong number of arguments for 'incrby' command"));
  EXPECT_EQ(Run({"DECRBY", "a", "1", "2"}),
            Err("ERR wrong number of arguments for 'decrby' command"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "a"}),
            Err("ERR wrong number of arguments for 'incrbyfloat' command"));
}

// --- INCRBYFLOAT --------------------------------------------------------------------------------

TEST_F(CounterFamilyTest, IncrByFloatBasics) {
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "1"}), Bulk("1"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "0.25"}), Bulk("1.25"));
  EXPECT_EQ(Run({"GET", "f"}), Bulk("1.25"));
  EXPECT_EQ(Run({"SET", "f", "1.5"}), kOk);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "1.5"}), Bulk("3"));
  EXPECT_EQ(Run({"INCR", "f"}), Int(4));
  EXPECT_EQ(Run({"SET", "f", "10.5"}), kOk);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "0.1"}), Bulk("10.6"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "g", "5.0e3"}), Bulk("5000"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "g", "-5000"}), Bulk("0"));
}

TEST_F(CounterFamilyTest, IncrByFloatOver32Bits) {
  EXPECT_EQ(Run({"SET", "f", "17179869184"}), kOk);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "1.5"}), Bulk("17179869185.5"));
  EXPECT_EQ(Run({"SET", "f", "17179869184"}), kOk);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "17179869184"}), Bulk("34359738368"));
}

TEST_F(CounterFamilyTest, IncrByFloatSpelling) {
  EXPECT_EQ(Run({"SET", "f", "1"}), kOk);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "-1.1"}), Bulk("-0.1"));
  // Seventeen decimals, then trailing zeros go: tiny results print as 0.
  EXPECT_EQ(Run({"INCRBYFLOAT", "tiny", "1e-20"}), Bulk("0"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "big", "1e20"}), Bulk("100000000000000000000"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "hex", "0x10"}), Bulk("16"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "neg", "-.5"}), Bulk("-0.5"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "plus", "+3"}), Bulk("3"));
}

TEST_F(CounterFamilyTest, IncrByFloatNoNegativeZero) {
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "0.024390243902439025"}), Bulk("0.02439024390243902"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "-0.024390243902439025"}), Bulk("0"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "g", "-0"}), Bulk("0"));
}

TEST_F(CounterFamilyTest, IncrByFloatRejectsBadNumbers) {
  for (std::string value : {"abc", "    11", "11    ", "", "1.5x", "nan", "1e5000", "1e-5000"}) {
    EXPECT_EQ(Run({"INCRBYFLOAT", "f", value}), kNotFloat) << "increment '" << value << "'";
    EXPECT_EQ(Run({"SET", "v", value}), kOk);
    EXPECT_EQ(Run({"INCRBYFLOAT", "v", "1"}), kNotFloat) << "value '" << value << "'";
  }
  EXPECT_EQ(Run({"EXISTS", "f"}), Int(0));
  // An embedded NUL ends strtold early, so the value is not a float.
  EXPECT_EQ(Run({"SET", "z", "1"}), kOk);
  EXPECT_EQ(Run({"SETRANGE", "z", "2", "2"}), Int(3));
  EXPECT_EQ(Run({"INCRBYFLOAT", "z", "1"}), kNotFloat);
}

TEST_F(CounterFamilyTest, IncrByFloatRefusesInfinity) {
  EXPECT_EQ(Run({"SET", "f", "0"}), kOk);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "+inf"}), kNanOrInf);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "-inf"}), kNanOrInf);
  EXPECT_EQ(Run({"SET", "f", "1e4932"}), kOk);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "1e4932"}), kNanOrInf);
  EXPECT_EQ(Run({"GET", "f"}), Bulk("1e4932"));
  EXPECT_EQ(Run({"SET", "g", "inf"}), kOk);
  EXPECT_EQ(Run({"INCRBYFLOAT", "g", "-inf"}), kNanOrInf);
}

// --- The number helpers themselves --------------------------------------------------------------

TEST(StringUtilTest, ParseInt64FollowsString2ll) {
  int64_t value = 42;
  EXPECT_TRUE(ParseInt64("0", &value));
  EXPECT_EQ(value, 0);
  EXPECT_TRUE(ParseInt64("-9223372036854775808", &value));
  EXPECT_EQ(value, INT64_MIN);
  EXPECT_TRUE(ParseInt64("9223372036854775807", &value));
  EXPECT_EQ(value, INT64_MAX);
  EXPECT_FALSE(ParseInt64("-", &value));
  EXPECT_FALSE(ParseInt64("-0", &value));
  EXPECT_FALSE(ParseInt64("00", &value));
  EXPECT_FALSE(ParseInt64("18446744073709551616", &value));
  EXPECT_FALSE(ParseInt64(std::string_view("1\0", 2), &value));
  int32_t small;
  EXPECT_TRUE(ParseInt32("-2147483648", &small));
  EXPECT_EQ(small, INT32_MIN);
  EXPECT_FALSE(ParseInt32("2147483648", &small));
}

TEST(StringUtilTest, FormatLongDouble) {
  char buf[kMaxLongDoubleChars];
  auto format = [&](long double value) { return std::string(buf, FormatLongDouble(value, buf)); };
  EXPECT_EQ(format(0), "0");
  EXPECT_EQ(format(-0.0L), "0");
  EXPECT_EQ(format(1.5L), "1.5");
  EXPECT_EQ(format(-2), "-2");
  EXPECT_EQ(format(1e-18L), "0");
  EXPECT_EQ(format(-1e-18L), "0");
  EXPECT_EQ(format(1.0L / 0.0L), "inf");
  EXPECT_EQ(format(-1.0L / 0.0L), "-inf");
  EXPECT_EQ(format(123456789.125L), "123456789.125");
}

}  // namespace
}  // namespace keep::commands
