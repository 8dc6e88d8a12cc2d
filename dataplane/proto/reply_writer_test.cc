#include "dataplane/proto/reply_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace keep::proto {
namespace {

// Runs `write` against a fresh writer of each version and returns {RESP2 bytes, RESP3 bytes}.
template <typename Fn>
std::pair<std::string, std::string> Both(Fn write) {
  std::string v2, v3;
  ReplyWriter w2(&v2, 2);
  ReplyWriter w3(&v3, 3);
  write(w2);
  write(w3);
  return {v2, v3};
}

void ExpectBoth(const std::pair<std::string, std::string>& got, std::string_view resp2,
                std::string_view resp3) {
  EXPECT_EQ(got.first, resp2);
  EXPECT_EQ(got.second, resp3);
}

TEST(ReplyWriter, Accessors) {
  std::string out;
  ReplyWriter w(&out, 3);
  EXPECT_EQ(w.resp_version(), 3);
  EXPECT_EQ(w.buffer(), &out);
}

TEST(ReplyWriter, OkAndSimple) {
  ExpectBoth(Both([](ReplyWriter& w) { w.Ok(); }), "+OK\r\n", "+OK\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Simple("PONG"); }), "+PONG\r\n", "+PONG\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Simple(""); }), "+\r\n", "+\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Simple("a\r\nb"); }), "+a  b\r\n", "+a  b\r\n");
}

TEST(ReplyWriter, Error) {
  ExpectBoth(Both([](ReplyWriter& w) { w.Error("ERR unknown command 'foo'"); }),
             "-ERR unknown command 'foo'\r\n", "-ERR unknown command 'foo'\r\n");
  ExpectBoth(Both([](ReplyWriter& w) {
               w.Error("WRONGTYPE Operation against a key holding the wrong kind of value");
             }),
             "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
             "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Error("ERR bad\r\nthing\n\r"); }), "-ERR bad  thing  \r\n",
             "-ERR bad  thing  \r\n");
}

TEST(ReplyWriter, ErrorOnlyRewritesItsOwnBytes) {
  std::string out = "+keep\r\n";
  ReplyWriter w(&out, 2);
  w.Error("ERR x\ny");
  EXPECT_EQ(out, "+keep\r\n-ERR x y\r\n");
}

TEST(ReplyWriter, Integer) {
  ExpectBoth(Both([](ReplyWriter& w) { w.Integer(0); }), ":0\r\n", ":0\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Integer(-42); }), ":-42\r\n", ":-42\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Integer(INT64_MAX); }), ":9223372036854775807\r\n",
             ":9223372036854775807\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Integer(INT64_MIN); }), ":-9223372036854775808\r\n",
             ":-9223372036854775808\r\n");
}

TEST(ReplyWriter, Bulk) {
  ExpectBoth(Both([](ReplyWriter& w) { w.Bulk("hello"); }), "$5\r\nhello\r\n", "$5\r\nhello\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Bulk(""); }), "$0\r\n\r\n", "$0\r\n\r\n");
  std::string binary("a\r\n\0b", 5);
  std::string expected = std::string("$5\r\n").append(binary).append("\r\n");
  ExpectBoth(Both([&](ReplyWriter& w) { w.Bulk(binary); }), expected, expected);
  std::string big(100000, 'x');
  std::string big_reply = std::string("$100000\r\n").append(big).append("\r\n");
  ExpectBoth(Both([&](ReplyWriter& w) { w.Bulk(big); }), big_reply, big_reply);
}

TEST(ReplyWriter, BulkLengthAtEveryDigitCount) {
  for (size_t length : {0, 1, 9, 10, 11, 99, 100, 128, 999, 1000, 4096, 9999, 10000, 10001,
                        123456, 1048576}) {
    const std::string value(length, 'v');
    std::string out = "x";  // after earlier output, as in a pipeline
    ReplyWriter(&out, 2).Bulk(value);
    EXPECT_EQ(out, "x$" + std::to_string(length) + "\r\n" + value + "\r\n") << length;
  }
}

TEST(ReplyWriter, BulkOfBytesInsideItsOwnBufferSurvivesTheBufferGrowing) {
  std::string out = "+PONG\r\n";
  out.shrink_to_fit();
  ReplyWriter w(&out, 2);
  w.Bulk(std::string_view(out).substr(1, 4));  // growing moves the bytes it is copying
  EXPECT_EQ(out, "+PONG\r\n$4\r\nPONG\r\n");
}

TEST(ReplyWriter, Nulls) {
  ExpectBoth(Both([](ReplyWriter& w) { w.Null(); }), "$-1\r\n", "_\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.NullArray(); }), "*-1\r\n", "_\r\n");
}

TEST(ReplyWriter, AggregateHeaders) {
  ExpectBoth(Both([](ReplyWriter& w) { w.ArrayHeader(3); }), "*3\r\n", "*3\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.ArrayHeader(0); }), "*0\r\n", "*0\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.MapHeader(2); }), "*4\r\n", "%2\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.MapHeader(0); }), "*0\r\n", "%0\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.SetHeader(5); }), "*5\r\n", "~5\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.PushHeader(3); }), "*3\r\n", ">3\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.ArrayHeader(1234567890123); }), "*1234567890123\r\n",
             "*1234567890123\r\n");
}

TEST(ReplyWriter, Bool) {
  ExpectBoth(Both([](ReplyWriter& w) { w.Bool(true); }), ":1\r\n", "#t\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Bool(false); }), ":0\r\n", "#f\r\n");
}

TEST(ReplyWriter, Double) {
  ExpectBoth(Both([](ReplyWriter& w) { w.Double(1.5); }), "$3\r\n1.5\r\n", ",1.5\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Double(0); }), "$1\r\n0\r\n", ",0\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Double(-0.0); }), "$2\r\n-0\r\n", ",-0\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Double(10); }), "$2\r\n10\r\n", ",10\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Double(0.1); }), "$19\r\n0.10000000000000001\r\n",
             ",0.10000000000000001\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Double(1e20); }), "$5\r\n1e+20\r\n", ",1e+20\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Double(3.14e-10); }), "$8\r\n3.14e-10\r\n",
             ",3.14e-10\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Double(-2.2250738585072014e-308); }),
             "$24\r\n-2.2250738585072014e-308\r\n", ",-2.2250738585072014e-308\r\n");
}

TEST(ReplyWriter, DoubleSpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  ExpectBoth(Both([&](ReplyWriter& w) { w.Double(inf); }), "$3\r\ninf\r\n", ",inf\r\n");
  ExpectBoth(Both([&](ReplyWriter& w) { w.Double(-inf); }), "$4\r\n-inf\r\n", ",-inf\r\n");
  // Redis 7.0 prints NaN through "%.17g": glibc writes "nan", or "-nan" with the sign bit set.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ExpectBoth(Both([&](ReplyWriter& w) { w.Double(nan); }), "$3\r\nnan\r\n", ",nan\r\n");
  ExpectBoth(Both([&](ReplyWriter& w) { w.Double(-nan); }), "$4\r\n-nan\r\n", ",-nan\r\n");
}

TEST(ReplyWriter, DoubleMatchesPrintf) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-1e6, 1e6);
  for (int i = 0; i < 20000; ++i) {
    double value;
    if (i % 2 == 0) {
      value = uniform(rng);
    } else {
      uint64_t bits = rng();
      std::memcpy(&value, &bits, sizeof(value));
      if (std::isinf(value)) continue;
    }
    char expected[64];
    int len = std::snprintf(expected, sizeof(expected), "%.17g", value);
    std::string out;
    ReplyWriter w(&out, 3);
    w.Double(value);
    ASSERT_EQ(out, std::string(",").append(expected, len).append("\r\n"));
  }
}

TEST(ReplyWriter, Verbatim) {
  ExpectBoth(Both([](ReplyWriter& w) { w.Verbatim("txt", "Some string"); }),
             "$11\r\nSome string\r\n", "=15\r\ntxt:Some string\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Verbatim("mkd", ""); }), "$0\r\n\r\n", "=4\r\nmkd:\r\n");
  // Redis pads a short format with spaces and truncates a long one to three bytes.
  ExpectBoth(Both([](ReplyWriter& w) { w.Verbatim("t", "x"); }), "$1\r\nx\r\n", "=5\r\nt  :x\r\n");
  ExpectBoth(Both([](ReplyWriter& w) { w.Verbatim("text", "x"); }), "$1\r\nx\r\n",
             "=5\r\ntex:x\r\n");
}

TEST(ReplyWriter, Raw) {
  ExpectBoth(Both([](ReplyWriter& w) { w.Raw("+QUEUED\r\n"); }), "+QUEUED\r\n", "+QUEUED\r\n");
}

TEST(ReplyWriter, AppendsToExistingBuffer) {
  std::string out = "prefix";
  ReplyWriter w(&out, 3);
  w.MapHeader(1);
  w.Bulk("k");
  w.Double(2.5);
  w.SetHeader(2);
  w.Integer(1);
  w.Null();
  EXPECT_EQ(out, "prefix%1\r\n$1\r\nk\r\n,2.5\r\n~2\r\n:1\r\n_\r\n");
}

TEST(ReplyWriter, HeadersDoNotAllocateWhenCapacitySuffices) {
  std::string out;
  out.reserve(256);
  const char* storage = out.data();
  ReplyWriter w(&out, 3);
  w.ArrayHeader(SIZE_MAX >> 1);
  w.Integer(INT64_MIN);
  w.MapHeader(7);
  w.Double(-1.2345678901234567e-300);
  w.Bool(true);
  w.Verbatim("txt", "abc");
  EXPECT_EQ(out.data(), storage);
}

}  // namespace
}  // namespace keep::proto
