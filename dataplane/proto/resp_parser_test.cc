#include "dataplane/proto/resp_parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace keep::proto {
namespace {

using Args = std::vector<std::string>;

struct Outcome {
  ParseStatus status;
  Args args;
  size_t consumed = 0;
  std::string error;
  size_t needed = 0;
};

Outcome ParseWith(RespParser& parser, std::string_view data) {
  std::vector<std::string_view> views;
  Outcome out;
  out.status = parser.Parse(data, &views, &out.consumed);
  for (std::string_view v : views) out.args.emplace_back(v);
  if (out.status == ParseStatus::kError) out.error = parser.error();
  if (out.status == ParseStatus::kIncomplete) out.needed = parser.needed();
  return out;
}

Outcome ParseOnce(std::string_view data, RespLimits limits = {}) {
  RespParser parser(limits);
  return ParseWith(parser, data);
}

// Parses every request in `data`, dropping empty ones as the server does. Returns the requests
// and the final status (kIncomplete when the input ended cleanly).
std::vector<Args> ParseAll(std::string_view data, ParseStatus* final_status = nullptr,
                           std::string* error = nullptr) {
  RespParser parser;
  std::vector<Args> requests;
  while (true) {
    Outcome out = ParseWith(parser, data);
    if (out.status != ParseStatus::kComplete) {
      if (final_status != nullptr) *final_status = out.status;
      if (error != nullptr) *error = out.error;
      return requests;
    }
    EXPECT_GT(out.consumed, 0u);
    data.remove_prefix(out.consumed);
    if (!out.args.empty()) requests.push_back(out.args);
  }
}

// Concatenates without `"literal" + std::string`, which trips a GCC 12 -Wrestrict false positive.
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

std::string Multibulk(const Args& args) {
  std::string out = Cat({"*", std::to_string(args.size()), "\r\n"});
  for (const std::string& a : args) {
    out += Cat({"$", std::to_string(a.size()), "\r\n", a, "\r\n"});
  }
  return out;
}

bool IsInside(std::string_view view, std::string_view whole) {
  return view.data() >= whole.data() && view.data() + view.size() <= whole.data() + whole.size();
}

void ExpectError(std::string_view data, std::string_view message, RespLimits limits = {}) {
  Outcome out = ParseOnce(data, limits);
  EXPECT_EQ(out.status, ParseStatus::kError) << testing::PrintToString(std::string(data));
  EXPECT_EQ(out.error, message) << testing::PrintToString(std::string(data));
  EXPECT_EQ(out.consumed, 0u);
}

void ExpectIncomplete(std::string_view data, RespLimits limits = {}) {
  Outcome out = ParseOnce(data, limits);
  EXPECT_EQ(out.status, ParseStatus::kIncomplete) << testing::PrintToString(std::string(data));
  EXPECT_EQ(out.consumed, 0u);
}

// `consumed` defaults to the whole input.
void ExpectRequest(std::string_view data, const Args& args, size_t consumed = SIZE_MAX) {
  if (consumed == SIZE_MAX) consumed = data.size();
  Outcome out = ParseOnce(data);
  ASSERT_EQ(out.status, ParseStatus::kComplete)
      << testing::PrintToString(std::string(data)) << " error: " << out.error;
  EXPECT_EQ(out.args, args) << testing::PrintToString(std::string(data));
  EXPECT_EQ(out.consumed, consumed) << testing::PrintToString(std::string(data));
}

constexpr std::string_view kInvalidMbulk = "ERR Protocol error: invalid multibulk length";
constexpr std::string_view kInvalidBulk = "ERR Protocol error: invalid bulk length";
constexpr std::string_view kTooBigMbulk = "ERR Protocol error: too big mbulk count string";
constexpr std::string_view kTooBigBulk = "ERR Protocol error: too big bulk count string";
constexpr std::string_view kTooBigInline = "ERR Protocol error: too big inline request";
constexpr std::string_view kUnbalanced = "ERR Protocol error: unbalanced quotes in request";

// ---------------------------------------------------------------------------------------------
// Multibulk

TEST(RespParserMultibulk, ParsesSimpleRequest) {
  std::string data = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
  ExpectRequest(data, {"SET", "key", "value"}, data.size());
}

TEST(RespParserMultibulk, ArgsAreViewsIntoInput) {
  std::string data = Multibulk({"GET", "some-key"});
  RespParser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(data, &args, &consumed), ParseStatus::kComplete);
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0].data(), data.data() + 8);
  EXPECT_TRUE(IsInside(args[1], data));
}

TEST(RespParserMultibulk, BinarySafeValues) {
  std::string value("a\r\nb\0c\r\n\0", 9);
  std::string data = Multibulk({"SET", std::string("k\0\r\n", 4), value});
  Outcome out = ParseOnce(data);
  ASSERT_EQ(out.status, ParseStatus::kComplete);
  EXPECT_EQ(out.args, (Args{"SET", std::string("k\0\r\n", 4), value}));
  EXPECT_EQ(out.consumed, data.size());
}

TEST(RespParserMultibulk, EmptyArgument) {
  ExpectRequest("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", {"ECHO", ""}, 20);
}

TEST(RespParserMultibulk, ZeroAndNegativeCountsAreEmptyRequests) {
  ExpectRequest("*0\r\n", {}, 4);
  ExpectRequest("*-1\r\n", {}, 5);
  ExpectRequest("*-10\r\nPING\r\n", {}, 6);
  ExpectRequest("*-9223372036854775808\r\n", {}, 23);
}

TEST(RespParserMultibulk, InvalidMultibulkLength) {
  for (std::string_view bad :
       {"*\r\n", "*abc\r\n", "*+1\r\n", "*01\r\n", "*00\r\n", "* 1\r\n", "*1 \r\n", "*-0\r\n",
        "*-\r\n", "*1x\r\n", "*1.0\r\n", "*99999999999999999999\r\n", "*-99999999999999999999\r\n",
        "*-9223372036854775809\r\n", "*9223372036854775808\r\n", "*123456789012345678901\r\n"}) {
    ExpectError(bad, kInvalidMbulk);
  }
}

TEST(RespParserMultibulk, MultibulkCountLimitIsRedis7IntMax) {
  // Redis 7.0 accepts any count up to INT_MAX and waits for the arguments.
  ExpectIncomplete("*2147483647\r\n");
  ExpectIncomplete("*3000000\r\n");
  ExpectError("*2147483648\r\n", kInvalidMbulk);
  ExpectError("*3000000000\r\n", kInvalidMbulk);
}

TEST(RespParserMultibulk, MultibulkCountLimitFromRespLimits) {
  RespLimits limits;
  limits.max_multibulk_len = 2;
  ExpectError("*3\r\n", kInvalidMbulk, limits);
  Outcome out = ParseOnce("*2\r\n$1\r\na\r\n$1\r\nb\r\n", limits);
  EXPECT_EQ(out.status, ParseStatus::kComplete);
  EXPECT_EQ(out.args, (Args{"a", "b"}));
}

TEST(RespParserMultibulk, HugeCountDoesNotReserveMemory) {
  RespParser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse("*1000000\r\n$1\r\na\r\n", &args, &consumed), ParseStatus::kIncomplete);
  EXPECT_LE(args.capacity(), 1024u);
}

TEST(RespParserMultibulk, TooBigMbulkCountString) {
  // Redis errors once more than PROTO_INLINE_MAX_SIZE bytes are buffered without a '\r'.
  std::string data = Cat({"*", std::string(65535, '1')});
  ExpectIncomplete(data);
  data += "1";
  ExpectError(data, kTooBigMbulk);
  RespLimits limits;
  limits.max_inline_len = 8;
  ExpectIncomplete("*1234567", limits);
  ExpectError("*12345678", kTooBigMbulk, limits);
}

TEST(RespParserMultibulk, HeaderNeedsByteAfterCarriageReturn) {
  ExpectIncomplete("*");
  ExpectIncomplete("*1");
  ExpectIncomplete("*1\r");
  ExpectIncomplete("*1\r\n");
  ExpectIncomplete("*1\r\n$4\r");
  ExpectIncomplete("*abc\r");  // the verdict waits for the full line, as in Redis
}

TEST(RespParserMultibulk, LineFeedAfterCarriageReturnIsNotChecked) {
  // Redis skips the two bytes after each length without looking at the second one.
  ExpectRequest("*1\rX$4\rYPING\r\n", {"PING"}, 14);
}

TEST(RespParserMultibulk, PayloadTerminatorIsNotChecked) {
  // Redis takes `len` bytes and then skips two bytes, whatever they are.
  ExpectRequest("*1\r\n$4\r\nPINGxx", {"PING"}, 14);
  std::vector<Args> all = ParseAll("*1\r\n$4\r\nPINGxxECHO\r\n");
  EXPECT_EQ(all, (std::vector<Args>{{"PING"}, {"ECHO"}}));
}

TEST(RespParserMultibulk, NulInHeaderHidesTheLine) {
  // Redis finds lines with strchr, which stops at NUL: it keeps waiting, then hits its limit.
  ExpectIncomplete(std::string_view("*1\0\r\n$4\r\nPING\r\n", 15));
  std::string data("*1\0\r\n", 5);
  data += std::string(70000, 'x');
  ExpectError(data, kTooBigMbulk);
  ExpectIncomplete(std::string_view("*1\r\n$\0\r\n", 8));
  ExpectIncomplete(std::string_view("*1\r\n\0\r\n", 7));
}

TEST(RespParserMultibulk, ExpectedDollar) {
  ExpectError("*1\r\nX4\r\n", "ERR Protocol error: expected '$', got 'X'");
  ExpectError("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
              "ERR Protocol error: expected '$', got 'f'");
  ExpectError("*1\r\n:4\r\n", "ERR Protocol error: expected '$', got ':'");
  // Redis maps CR and LF in error texts to spaces.
  ExpectError("*1\r\n\r\r\n", "ERR Protocol error: expected '$', got ' '");
  ExpectError("*1\r\n\n4\r\n", "ERR Protocol error: expected '$', got ' '");
  ExpectError(
      "*1\r\n\xff"
      "4\r\n",
      "ERR Protocol error: expected '$', got '\xff'");
  // The check waits for a complete line.
  ExpectIncomplete("*1\r\nX");
  ExpectIncomplete("*1\r\nX4\r");
}

TEST(RespParserMultibulk, TooBigBulkCountString) {
  std::string data = Cat({"*1\r\n$", std::string(65535, '1')});
  ExpectIncomplete(data);
  data += "1";
  ExpectError(data, kTooBigBulk);
  // The limit applies to everything buffered from the header on, '$' or not.
  ExpectError(Cat({"*1\r\n", std::string(65537, 'x')}), kTooBigBulk);
  RespLimits limits;
  limits.max_inline_len = 4;
  ExpectIncomplete("*1\r\n$123", limits);
  ExpectError("*1\r\n$1234", kTooBigBulk, limits);
}

TEST(RespParserMultibulk, InvalidBulkLength) {
  for (std::string_view bad :
       {"*1\r\n$\r\n", "*1\r\n$-1\r\n", "*1\r\n$-0\r\n", "*1\r\n$+4\r\n", "*1\r\n$04\r\n",
        "*1\r\n$00\r\n", "*1\r\n$ 4\r\n", "*1\r\n$4 \r\n", "*1\r\n$abc\r\n", "*1\r\n$4x\r\n",
        "*1\r\n$99999999999999999999\r\n", "*1\r\n$999999999999999999999\r\n",
        "*1\r\n$1073741824\r\n", "*1\r\n$536870913\r\n", "*2\r\n$4\r\nECHO\r\n$-5\r\n"}) {
    ExpectError(bad, kInvalidBulk);
  }
}

TEST(RespParserMultibulk, BulkLengthLimitFromRespLimits) {
  ExpectIncomplete("*1\r\n$536870912\r\n");  // exactly proto-max-bulk-len is allowed
  RespLimits limits;
  limits.max_bulk_len = 3;
  ExpectError("*1\r\n$4\r\nPING\r\n", kInvalidBulk, limits);
  Outcome out = ParseOnce("*1\r\n$3\r\nGET\r\n", limits);
  EXPECT_EQ(out.status, ParseStatus::kComplete);
}

TEST(RespParserMultibulk, NeededWhileWaitingForPayload) {
  std::string data = "*2\r\n$3\r\nGET\r\n$10\r\nabc";
  Outcome out = ParseOnce(data);
  ASSERT_EQ(out.status, ParseStatus::kIncomplete);
  // Payload starts at 18; 10 bytes plus CRLF.
  EXPECT_EQ(out.needed, 30u);
  data += "defghij";
  EXPECT_EQ(ParseOnce(data).needed, 30u);
  data += "\r";
  EXPECT_EQ(ParseOnce(data).needed, 30u);
  data += "\n";
  EXPECT_EQ(ParseOnce(data).status, ParseStatus::kComplete);
  EXPECT_EQ(data.size(), 30u);
}

TEST(RespParserMultibulk, NeededForLargeValue) {
  std::string data = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n";
  size_t payload_at = data.size();
  data += std::string(65536, 'v');
  Outcome out = ParseOnce(data);
  ASSERT_EQ(out.status, ParseStatus::kIncomplete);
  EXPECT_EQ(out.needed, payload_at + 1000000 + 2);
}

TEST(RespParserMultibulk, NeededIsZeroWhileWaitingForHeaders) {
  EXPECT_EQ(ParseOnce("*2\r\n$3\r\nGET\r\n").needed, 0u);
  EXPECT_EQ(ParseOnce("*2\r\n$3\r\nGET\r\n$1").needed, 0u);
  EXPECT_EQ(ParseOnce("*2").needed, 0u);
  EXPECT_EQ(ParseOnce("").needed, 0u);
  // And it is reset by the next call.
  RespParser parser;
  ParseWith(parser, "*1\r\n$100\r\n");
  EXPECT_EQ(parser.needed(), 112u);
  EXPECT_EQ(ParseWith(parser, "*1").needed, 0u);
}

TEST(RespParserMultibulk, LongestCanonicalLengths) {
  // 18-digit lengths take the fast path, longer ones the exact slow path: both must agree.
  RespLimits limits;
  limits.max_bulk_len = SIZE_MAX;
  limits.max_multibulk_len = SIZE_MAX;
  Outcome out = ParseOnce("*1\r\n$999999999999999999\r\n", limits);
  EXPECT_EQ(out.status, ParseStatus::kIncomplete);
  EXPECT_EQ(out.needed, 25u + 999999999999999999ull + 2);
  out = ParseOnce("*1\r\n$9223372036854775807\r\n", limits);
  EXPECT_EQ(out.status, ParseStatus::kIncomplete);
  EXPECT_EQ(out.needed, 26u + 9223372036854775807ull + 2);
  ExpectError("*1\r\n$9223372036854775808\r\n", kInvalidBulk, limits);
  EXPECT_EQ(ParseOnce("*9223372036854775807\r\n", limits).status, ParseStatus::kIncomplete);
}

TEST(RespParserMultibulk, SplitAtEveryByte) {
  std::string value("bin\r\n\0ary", 9);
  std::vector<Args> requests = {
      {"SET", "key", value},
      {"MSET", "a", "1", "b", "", "c", std::string(300, 'z')},
      {"PING"},
  };
  for (const Args& args : requests) {
    std::string data = Multibulk(args);
    for (size_t len = 0; len < data.size(); ++len) {
      Outcome out = ParseOnce(std::string_view(data).substr(0, len));
      ASSERT_EQ(out.status, ParseStatus::kIncomplete) << "prefix " << len;
      EXPECT_EQ(out.consumed, 0u);
      if (out.needed != 0) {
        EXPECT_GT(out.needed, len);
        EXPECT_LE(out.needed, data.size());
      }
    }
    Outcome out = ParseOnce(data);
    ASSERT_EQ(out.status, ParseStatus::kComplete);
    EXPECT_EQ(out.args, args);
    EXPECT_EQ(out.consumed, data.size());
  }
}

TEST(RespParserMultibulk, PipelinedRequests) {
  std::string data = Multibulk({"SET", "a", "1"}) + Multibulk({"GET", "a"}) + "*0\r\n" +
                     Multibulk({"DEL", "a", "b"}) + "*1\r\n$4\r\nPI";
  ParseStatus status;
  std::vector<Args> all = ParseAll(data, &status);
  EXPECT_EQ(all, (std::vector<Args>{{"SET", "a", "1"}, {"GET", "a"}, {"DEL", "a", "b"}}));
  EXPECT_EQ(status, ParseStatus::kIncomplete);
}

TEST(RespParserMultibulk, ErrorAfterGoodRequests) {
  ParseStatus status;
  std::string error;
  std::vector<Args> all =
      ParseAll(Cat({Multibulk({"PING"}), "*1\r\n$x\r\n", Multibulk({"PING"})}), &status, &error);
  EXPECT_EQ(all, (std::vector<Args>{{"PING"}}));
  EXPECT_EQ(status, ParseStatus::kError);
  EXPECT_EQ(error, kInvalidBulk);
}

TEST(RespParserMultibulk, ReusesArgsCapacity) {
  RespParser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  std::string first = Multibulk({"MSET", "a", "1", "b", "2"});
  ASSERT_EQ(parser.Parse(first, &args, &consumed), ParseStatus::kComplete);
  const std::string_view* storage = args.data();
  std::string second = Multibulk({"GET", "a"});
  ASSERT_EQ(parser.Parse(second, &args, &consumed), ParseStatus::kComplete);
  EXPECT_EQ(args.data(), storage);
  EXPECT_EQ(args.size(), 2u);
}

TEST(RespParserMultibulk, RandomRequestsRoundTrip) {
  std::mt19937 rng(12345);
  for (int iter = 0; iter < 300; ++iter) {
    Args args(1 + rng() % 6);
    for (std::string& a : args) {
      a.resize(rng() % 40);
      for (char& c : a) c = static_cast<char>(rng());
    }
    std::string data = Multibulk(args);
    size_t cut = rng() % data.size();
    EXPECT_EQ(ParseOnce(std::string_view(data).substr(0, cut)).status, ParseStatus::kIncomplete);
    Outcome out = ParseOnce(data + "trailing");
    ASSERT_EQ(out.status, ParseStatus::kComplete);
    EXPECT_EQ(out.args, args);
    EXPECT_EQ(out.consumed, data.size());
  }
}

// ---------------------------------------------------------------------------------------------
// Inline

TEST(RespParserInline, SimpleCommands) {
  ExpectRequest("PING\r\n", {"PING"}, 6);
  ExpectRequest("PING\n", {"PING"}, 5);
  ExpectRequest("SET a b\r\nGET a\r\n", {"SET", "a", "b"}, 9);
  ExpectRequest("  SET \t a   b  \r\n", {"SET", "a", "b"});
}

TEST(RespParserInline, PlainArgsAreViewsIntoInput) {
  std::string data = "SET key \"quoted value\" 'single'\r\n";
  RespParser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(data, &args, &consumed), ParseStatus::kComplete);
  ASSERT_EQ(args.size(), 4u);
  for (std::string_view a : args) EXPECT_TRUE(IsInside(a, data)) << a;
  EXPECT_EQ(args[2], "quoted value");
  EXPECT_EQ(args[3], "single");
}

TEST(RespParserInline, WaitsForNewline) {
  ExpectIncomplete("PING");
  ExpectIncomplete("PING\r");
  ExpectIncomplete("SET \"a b");
}

TEST(RespParserInline, EmptyLinesAreEmptyRequests) {
  ExpectRequest("\r\n", {});
  ExpectRequest("\n", {});
  ExpectRequest("   \t \r\n", {});
  ExpectRequest("\r\r\n", {});
  std::vector<Args> all = ParseAll("\r\n\nPING\n");
  EXPECT_EQ(all, (std::vector<Args>{{"PING"}}));
}

TEST(RespParserInline, CarriageReturnInsideLineSplitsTokens) {
  ExpectRequest("ECHO a\rb\r\n", {"ECHO", "a", "b"});
  ExpectRequest("ECHO a\r\rPING\r\n", {"ECHO", "a", "PING"});
}

TEST(RespParserInline, VerticalTabAndFormFeed) {
  // Blank skipping uses isspace(), but only space, \t, \r, \n end a bare token.
  ExpectRequest("PING\vx\r\n", {"PING\vx"});
  ExpectRequest("\vPING\r\n", {"PING"});
  ExpectRequest("ECHO x\fy\r\n", {"ECHO", "x\fy"});
  ExpectRequest("ECHO \"a\"\v\r\n", {"ECHO", "a"});
}

TEST(RespParserInline, DoubleQuoteEscapes) {
  ExpectRequest("ECHO \"\\n\\r\\t\\b\\a\\\\\\\"\\q\"\r\n", {"ECHO", "\n\r\t\b\a\\\"q"});
  ExpectRequest("ECHO \"a\\x41\\xZZ\\q\"\r\n", {"ECHO", "aAxZZq"});
  ExpectRequest("ECHO \"\\x41\\x4A\\x4a\\x00\\xff\"\r\n", {"ECHO", std::string("AJJ\0\xff", 5)});
  ExpectRequest("ECHO \"\\x4g\"\r\n", {"ECHO", "x4g"});
  ExpectRequest("ECHO \"\\x\"\r\n", {"ECHO", "x"});
  ExpectRequest("ECHO \"\\x4\"\r\n", {"ECHO", "x4"});
  ExpectRequest("ECHO \"a\\\\\"\r\n", {"ECHO", "a\\"});
}

TEST(RespParserInline, SingleQuotes) {
  ExpectRequest("ECHO 'a\\'b\\n'\r\n", {"ECHO", "a'b\\n"});
  ExpectRequest("ECHO 'say \"hi\"'\r\n", {"ECHO", "say \"hi\""});
}

TEST(RespParserInline, QuotesJoinWithBareText) {
  ExpectRequest("ECHO a\"b c\"\r\n", {"ECHO", "ab c"});
  ExpectRequest("ECHO a'b c'\r\n", {"ECHO", "ab c"});
}

TEST(RespParserInline, EmptyQuotedStrings) { ExpectRequest("ECHO \"\" ''\r\n", {"ECHO", "", ""}); }

TEST(RespParserInline, UnbalancedQuotes) {
  for (std::string_view bad :
       {"ECHO \"ab\r\n", "ECHO 'ab\r\n", "ECHO \"ab\"c\r\n", "ECHO 'ab'c\r\n", "ECHO \"a\"'b'\r\n",
        "ECHO \"a\\\"\r\n", "ECHO 'a\\\\'\r\n", "ECHO \"a\\\r\n", "ECHO '\r\n", "\"\n"}) {
    ExpectError(bad, kUnbalanced);
  }
}

TEST(RespParserInline, NonAsciiBytesPassThrough) {
  ExpectRequest("ECHO \xe9\xa0x\r\n", {"ECHO", "\xe9\xa0x"});
}

TEST(RespParserInline, NulHidesTheNewline) {
  ExpectIncomplete(std::string_view("ECHO a\0b\r\n", 10));
  std::string data("ECHO a\0b\r\n", 10);
  data += std::string(65536, 'x');
  ExpectError(data, kTooBigInline);
}

TEST(RespParserInline, TooBigInlineRequest) {
  std::string data(65536, 'A');
  ExpectIncomplete(data);
  data += "A";
  ExpectError(data, kTooBigInline);
  RespLimits limits;
  limits.max_inline_len = 8;
  ExpectIncomplete("GET abcd", limits);
  ExpectError("GET abcde", kTooBigInline, limits);
}

TEST(RespParserInline, LongLineWithNewlineIsAccepted) {
  // Like Redis, the limit only applies while no newline has been buffered.
  std::string data = Cat({"ECHO ", std::string(70000, 'x'), "\r\n"});
  ExpectRequest(data, {"ECHO", std::string(70000, 'x')}, data.size());
}

TEST(RespParserInline, ManyEscapedArgsStayValid) {
  std::string data;
  Args expected;
  for (int i = 0; i < 200; ++i) {
    data += Cat({"\"a\\x41", std::to_string(i), "\" "});
    expected.push_back(Cat({"aA", std::to_string(i)}));
  }
  data += "\r\n";
  ExpectRequest(data, expected, data.size());
}

TEST(RespParserInline, ScratchIsReusedAcrossCalls) {
  RespParser parser;
  Outcome first = ParseWith(parser, "ECHO \"\\x41\"\r\n");
  EXPECT_EQ(first.args, (Args{"ECHO", "A"}));
  Outcome second = ParseWith(parser, "ECHO \"\\x42\\x43\"\r\n");
  EXPECT_EQ(second.args, (Args{"ECHO", "BC"}));
}

TEST(RespParserInline, SplitAtEveryByte) {
  std::string data = "SET \"k\\x41y\" 'v a l' plain\r\n";
  for (size_t len = 0; len < data.size(); ++len) {
    Outcome out = ParseOnce(std::string_view(data).substr(0, len));
    ASSERT_EQ(out.status, ParseStatus::kIncomplete) << "prefix " << len;
    EXPECT_EQ(out.needed, 0u);
  }
  ExpectRequest(data, {"SET", "kAy", "v a l", "plain"}, data.size());
}

TEST(RespParserMixed, PipelinedInlineAndMultibulk) {
  std::string data = Cat({"PING\r\n", Multibulk({"SET", "a\r\nb", "c"}), "GET \"a\\r\\nb\"\n\r\n",
                          Multibulk({"DEL", "x"}), "ECHO"});
  ParseStatus status;
  std::vector<Args> all = ParseAll(data, &status);
  EXPECT_EQ(all,
            (std::vector<Args>{{"PING"}, {"SET", "a\r\nb", "c"}, {"GET", "a\r\nb"}, {"DEL", "x"}}));
  EXPECT_EQ(status, ParseStatus::kIncomplete);
}

TEST(RespParserMixed, EmptyInputIsIncomplete) {
  Outcome out = ParseOnce("");
  EXPECT_EQ(out.status, ParseStatus::kIncomplete);
  EXPECT_EQ(out.consumed, 0u);
}

// The canonical fast path (ParseCanonical) must answer exactly as the general parse would: same
// status, arguments, bytes consumed, error and needed(), for every prefix of real requests and
// every single-byte change of them (a digit too many, a leading zero, a missing '\r', a limit).
TEST(RespParserCanonical, AgreesWithTheGeneralParse) {
  const std::vector<std::string> requests = {
      "*2\r\n$3\r\nGET\r\n$8\r\nkey:1234\r\n",
      "*3\r\n$3\r\nSET\r\n$3\r\nabc\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n",
      "*1\r\n$12345\r\n" + std::string(12345, 'v') + "\r\n",
      "*9\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n"
      "$1\r\ng\r\n$1\r\nh\r\n$10\r\n0123456789\r\n",
      "*2\r\n$123456\r\n" + std::string(123456, 'w') + "\r\n$2\r\nok\r\n",
  };
  const std::string mutations = std::string("0129$*\r\n-+ a") + '\0';
  for (const RespLimits& limits :
       {RespLimits{}, RespLimits{.max_bulk_len = 9, .max_multibulk_len = 2}}) {
    RespParser fast(limits);
    RespParser general(limits);
    general.set_canonical_fast_path(false);
    auto agree = [&](std::string_view input) {
      std::vector<std::string_view> fast_args = {"kept"};
      std::vector<std::string_view> general_args = {"kept"};
      size_t fast_consumed = 7;
      size_t general_consumed = 7;
      const ParseStatus fast_status = fast.ParseAppending(input, &fast_args, &fast_consumed);
      const ParseStatus general_status =
          general.ParseAppending(input, &general_args, &general_consumed);
      ASSERT_EQ(fast_status, general_status) << input.substr(0, 64);
      ASSERT_EQ(fast_args, general_args) << input.substr(0, 64);
      ASSERT_EQ(fast_consumed, general_consumed) << input.substr(0, 64);
      ASSERT_EQ(fast.needed(), general.needed()) << input.substr(0, 64);
      if (fast_status == ParseStatus::kError) {
        ASSERT_EQ(fast.error(), general.error());
      }
    };
    for (const std::string& request : requests) {
      const size_t step = request.size() > 1000 ? 97 : 1;
      for (size_t length = 1; length <= request.size(); length += step) {
        agree(std::string_view(request).substr(0, length));
      }
      agree(request);
      const size_t mutate_up_to = std::min<size_t>(request.size(), 40);
      for (size_t at = 0; at < mutate_up_to; ++at) {
        for (char byte : mutations) {
          std::string changed = request;
          changed[at] = byte;
          agree(changed);
          std::string inserted = request;
          inserted.insert(at, 1, byte);
          agree(inserted);
        }
      }
    }
  }
}

TEST(PeekMultibulkArgument, NamesTheArgumentsOfAWholeRequest) {
  const std::string_view request = "*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$2\r\nab\r\n";
  std::string_view arg;
  ASSERT_TRUE(PeekMultibulkArgument(request, 0, &arg));
  EXPECT_EQ(arg, "SET");
  ASSERT_TRUE(PeekMultibulkArgument(request, 1, &arg));
  EXPECT_EQ(arg, "key:1");
  EXPECT_EQ(arg.data(), request.data() + 17);
  ASSERT_TRUE(PeekMultibulkArgument(request, 2, &arg));
  EXPECT_EQ(arg, "ab");
  EXPECT_FALSE(PeekMultibulkArgument(request, 3, &arg));
}

TEST(PeekMultibulkArgument, EveryPrefixIsRefusedOrRight) {
  const std::string request = "*2\r\n$3\r\nGET\r\n$10\r\nkey:000042\r\n";
  const size_t key_end = request.find("key:000042") + 10;
  for (size_t length = 0; length <= request.size(); ++length) {
    std::string prefix = request.substr(0, length);
    std::string_view arg;
    const bool found = PeekMultibulkArgument(prefix, 1, &arg);
    EXPECT_EQ(found, length >= key_end) << length;
    if (found) {
      EXPECT_EQ(arg, "key:000042");
    }
  }
}

TEST(PeekMultibulkArgument, RefusesWhatIsNotACanonicalMultibulk) {
  std::string_view arg;
  for (std::string_view input : std::initializer_list<std::string_view>{
           "", "GET key\r\n", "*x\r\n$3\r\nGET\r\n$1\r\na\r\n", "*2\n$3\r\nGET\r\n$1\r\na\r\n",
           "*2\r\n$-1\r\n$1\r\na\r\n", "*2\r\n:3\r\nGET\r\n$1\r\na\r\n",
           "*2\r\n$3\r\nGET\r\n$9999999999\r\na\r\n", "*1\r\n$4\r\nPING\r\n",
           "*2\r\n$\r\nGET\r\n$1\r\na\r\n", std::string_view("*2\r\n$3\r\nG\0T\r\n$1\r", 16)}) {
    EXPECT_FALSE(PeekMultibulkArgument(input, 1, &arg)) << input;
  }
}

}  // namespace
}  // namespace keep::proto
