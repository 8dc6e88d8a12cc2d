#include "bench/keep_bench/workload.h"

#include <gtest/gtest.h>

#include <map>

#include "bench/keep_bench/resp_codec.h"

namespace keep::bench {
namespace {

Options Make(WorkloadKind kind) {
  Options o;
  o.workload = kind;
  o.keys = 10000;
  o.value_size = 4;
  return o;
}

TEST(WorkloadTest, KeyWidth) {
  EXPECT_EQ(KeyWidth(1), 1);
  EXPECT_EQ(KeyWidth(10), 1);
  EXPECT_EQ(KeyWidth(11), 2);
  EXPECT_EQ(KeyWidth(10000), 4);
  EXPECT_EQ(KeyWidth(10001), 5);
}

TEST(WorkloadTest, GetPatchesTheKeyInPlace) {
  RespCodec codec;
  Options o = Make(WorkloadKind::kGet);
  Workload w(o, codec, "", "");
  RequestSource s = w.MakeSource(0);
  Rng rng(1);
  std::string out;
  uint64_t key = 0;
  int index = -1;
  s.Next(rng, &out, &key, &index);
  char digits[8];
  std::snprintf(digits, sizeof digits, "%04llu", static_cast<unsigned long long>(key));
  EXPECT_EQ(out, std::string("*2\r\n$3\r\nGET\r\n$8\r\nkey:") + digits + "\r\n");
  EXPECT_EQ(index, 0);
}

TEST(WorkloadTest, MixedFollowsTheRatio) {
  RespCodec codec;
  Options o = Make(WorkloadKind::kMixed);
  o.ratio_reads = 3;
  o.ratio_writes = 1;
  Workload w(o, codec, "", "");
  RequestSource s = w.MakeSource(0);
  Rng rng(2);
  std::map<int, int> counts;
  std::string out;
  for (int i = 0; i < 40000; ++i) {
    uint64_t key;
    int index;
    out.clear();
    s.Next(rng, &out, &key, &index);
    ++counts[index];
  }
  EXPECT_NEAR(counts[0] / 40000.0, 0.75, 0.02);
  EXPECT_NEAR(counts[1] / 40000.0, 0.25, 0.02);
}

TEST(WorkloadTest, LockReleasesOnlyWhatItAcquired) {
  RespCodec codec;
  Options o = Make(WorkloadKind::kLock);
  Workload w(o, codec, "", "");
  RequestSource s = w.MakeSource(3);
  Rng rng(3);
  std::string out;
  uint64_t key;
  int index;
  s.Next(rng, &out, &key, &index);
  EXPECT_NE(out.find("tok-00000003"), std::string::npos);
  EXPECT_NE(out.find("NX"), std::string::npos);
  Reply nil;
  nil.kind = ReplyKind::kNil;
  std::string follow;
  int follow_index;
  EXPECT_FALSE(s.FollowUp(index, key, nil, &follow, &follow_index));
  Reply ok;
  ok.kind = ReplyKind::kOk;
  ASSERT_TRUE(s.FollowUp(index, key, ok, &follow, &follow_index));
  EXPECT_NE(follow.find("DELIFEQ"), std::string::npos);
  EXPECT_NE(follow.find("tok-00000003"), std::string::npos);
  // The same key as the acquire.
  EXPECT_NE(follow.find(out.substr(out.find("lock:"), 9)), std::string::npos);
}

TEST(WorkloadTest, LuaFormsUseTheLoadedSha) {
  RespCodec codec;
  Options o = Make(WorkloadKind::kRateLimit);
  o.ratelimit_form = RateLimitForm::kLua;
  Workload w(o, codec, "abc123", "");
  RequestSource s = w.MakeSource(0);
  Rng rng(4);
  std::string out;
  uint64_t key;
  int index;
  s.Next(rng, &out, &key, &index);
  EXPECT_EQ(out.substr(0, 29), "*5\r\n$7\r\nEVALSHA\r\n$6\r\nabc123\r\n");
  EXPECT_NE(out.find("rl:"), std::string::npos);
}

TEST(WorkloadTest, CounterExpiresOnCreateOnly) {
  RespCodec codec;
  Options o = Make(WorkloadKind::kCoord);
  Workload w(o, codec, "", "");
  RequestSource s = w.MakeSource(0);
  int incr = -1;
  for (size_t i = 0; i < s.templates().size(); ++i) {
    if (s.templates()[i].action == ReplyAction::kExpireOnCreate) incr = static_cast<int>(i);
  }
  ASSERT_GE(incr, 0);
  Reply one;
  one.kind = ReplyKind::kInteger;
  one.integer = 1;
  Reply two = one;
  two.integer = 2;
  std::string follow;
  int index;
  EXPECT_FALSE(s.FollowUp(incr, 17, two, &follow, &index));
  ASSERT_TRUE(s.FollowUp(incr, 17, one, &follow, &index));
  EXPECT_NE(follow.find("PEXPIRE"), std::string::npos);
  EXPECT_NE(follow.find("ctr:0017"), std::string::npos);
}

TEST(WorkloadTest, ZipfFollowsThePowerLaw) {
  ZipfSampler zipf(1000, 1.0);
  Rng rng(5);
  std::map<uint64_t, int> counts;
  const int kSamples = 400000;
  for (int i = 0; i < kSamples; ++i) {
    uint64_t k = zipf.Sample(rng);
    ASSERT_GE(k, 1u);
    ASSERT_LE(k, 1000u);
    ++counts[k];
  }
  // P(1)/P(2) = 2 and P(1)/P(4) = 4 for s = 1; P(1) = 1/H(1000) ~ 0.1336.
  EXPECT_NEAR(static_cast<double>(counts[1]) / counts[2], 2.0, 0.1);
  EXPECT_NEAR(static_cast<double>(counts[1]) / counts[4], 4.0, 0.25);
  EXPECT_NEAR(static_cast<double>(counts[1]) / kSamples, 0.1336, 0.005);
}

TEST(WorkloadTest, UniformCoversTheKeySpace) {
  Options o = Make(WorkloadKind::kGet);
  o.keys = 10;
  KeyPicker picker(o);
  Rng rng(6);
  std::map<uint64_t, int> counts;
  for (int i = 0; i < 10000; ++i) ++counts[picker.Pick(rng)];
  EXPECT_EQ(counts.size(), 10u);
  for (auto& [k, n] : counts) EXPECT_NEAR(n, 1000, 150) << k;
}

}  // namespace
}  // namespace keep::bench
