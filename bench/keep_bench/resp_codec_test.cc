#include "bench/keep_bench/resp_codec.h"

#include <gtest/gtest.h>

namespace keep::bench {
namespace {

Reply Parse(std::string_view in) { return RespCodec().Parse(in); }

TEST(RespCodecTest, EncodesArraysOfBulkStringsWithArgumentOffsets) {
  std::string out;
  std::vector<size_t> offsets;
  std::string_view args[] = {"SET", "key:0042", "v"};
  RespCodec().Encode(args, &out, &offsets);
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$8\r\nkey:0042\r\n$1\r\nv\r\n");
  ASSERT_EQ(offsets.size(), 3u);
  EXPECT_EQ(out.substr(offsets[1], 8), "key:0042");
  EXPECT_EQ(out.substr(offsets[2], 1), "v");
}

TEST(RespCodecTest, Scalars) {
  Reply r = Parse("+OK\r\n");
  EXPECT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(r.kind, ReplyKind::kOk);
  EXPECT_EQ(r.consumed, 5u);

  r = Parse("+PONG\r\nextra");
  EXPECT_EQ(r.kind, ReplyKind::kOther);
  EXPECT_EQ(r.text, "PONG");
  EXPECT_EQ(r.consumed, 7u);

  r = Parse("-ERR unknown command 'RATE.FIXED'\r\n");
  EXPECT_EQ(r.kind, ReplyKind::kError);
  EXPECT_EQ(r.text, "ERR unknown command 'RATE.FIXED'");

  r = Parse(":-42\r\n");
  EXPECT_EQ(r.kind, ReplyKind::kInteger);
  EXPECT_EQ(r.integer, -42);

  r = Parse("$-1\r\n");
  EXPECT_EQ(r.kind, ReplyKind::kNil);
  r = Parse("*-1\r\n");
  EXPECT_EQ(r.kind, ReplyKind::kNil);
  r = Parse("_\r\n");
  EXPECT_EQ(r.kind, ReplyKind::kNil);

  r = Parse("$5\r\nhello\r\n");
  EXPECT_EQ(r.kind, ReplyKind::kOther);
  EXPECT_EQ(r.text, "hello");
  EXPECT_EQ(r.consumed, 11u);

  r = Parse("$0\r\n\r\n");
  EXPECT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(r.text, "");
}

TEST(RespCodecTest, Aggregates) {
  // RATE.FIXED-like reply: allowed, remaining, reset.
  Reply r = Parse("*3\r\n:1\r\n:99\r\n:1000\r\n+OK\r\n");
  EXPECT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(r.kind, ReplyKind::kOther);
  EXPECT_EQ(r.consumed, 20u);
  r = Parse("*2\r\n*1\r\n$1\r\na\r\n-ERR inner\r\n");
  EXPECT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(r.kind, ReplyKind::kOther);  // an inner error is data, not a failed request
  r = Parse("*0\r\n");
  EXPECT_EQ(r.status, ParseStatus::kComplete);
  r = Parse("%1\r\n+a\r\n:1\r\n");
  EXPECT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(r.consumed, 12u);
}

TEST(RespCodecTest, EveryPrefixIsIncomplete) {
  const std::string replies[] = {"+OK\r\n",
                                 "-ERR x\r\n",
                                 ":12345\r\n",
                                 "$5\r\nhello\r\n",
                                 "*3\r\n:1\r\n$2\r\nab\r\n*1\r\n+x\r\n",
                                 "$-1\r\n"};
  for (const std::string& full : replies) {
    for (size_t n = 0; n < full.size(); ++n) {
      EXPECT_EQ(Parse(full.substr(0, n)).status, ParseStatus::kIncomplete)
          << "'" << full.substr(0, n) << "'";
    }
    Reply r = Parse(full);
    EXPECT_EQ(r.status, ParseStatus::kComplete) << full;
    EXPECT_EQ(r.consumed, full.size());
  }
}

TEST(RespCodecTest, InvalidStreams) {
  for (std::string_view bad :
       {"?\r\n", "hello\r\n", ":12a\r\n", ":\r\n", "$-2\r\n", "$3\r\nabcd\r\n", "*-2\r\n", "+OK\rX",
        "$x\r\n", "*1\r\n!\r\n", ":99999999999999999999\r\n", "_x\r\n"}) {
    EXPECT_EQ(Parse(bad).status, ParseStatus::kInvalid) << bad;
  }
}

TEST(RespCodecTest, DeepNestingIsRefused) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "*1\r\n";
  deep += ":1\r\n";
  EXPECT_EQ(Parse(deep).status, ParseStatus::kInvalid);
}

TEST(RespCodecTest, BinaryProtocolHasNoCodec) {
  std::string error;
  EXPECT_EQ(MakeCodec(Protocol::kBinary, &error), nullptr);
  EXPECT_NE(error.find("runs through libkeep"), std::string::npos);
  EXPECT_NE(MakeCodec(Protocol::kResp, &error), nullptr);
}

}  // namespace
}  // namespace keep::bench
