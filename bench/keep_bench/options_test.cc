#include "bench/keep_bench/options.h"

#include <gtest/gtest.h>

namespace keep::bench {
namespace {

ParseResult Parse(std::vector<std::string> args) { return ParseOptions(args); }

TEST(OptionsTest, Defaults) {
  ParseResult r = Parse({});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.options.port, 6379);
  EXPECT_EQ(r.options.connections, 50);
  EXPECT_EQ(r.options.pipeline, 1);
  EXPECT_EQ(r.options.keys, 10000u);
  EXPECT_EQ(r.options.value_size, 128u);
  EXPECT_EQ(r.options.duration_s, 10);
  EXPECT_EQ(r.options.requests, 0u);
  EXPECT_EQ(r.options.ratio_reads, 9u);
  EXPECT_EQ(r.options.ratio_writes, 1u);
}

TEST(OptionsTest, EveryFlag) {
  ParseResult r = Parse(
      {"--host", "localhost",    "--port=7000", "--protocol",       "resp",    "--workload",
       "mixed",  "--threads",    "2",           "--connections",    "8",       "--pipeline",
       "16",     "--requests",   "5000",        "--rate",           "20000",   "--keys",
       "100",    "--value-size", "32",          "--distribution",   "zipf",    "--zipf-exponent",
       "1.2",    "--ratio",      "3:1",         "--ratelimit-form", "lua",     "--lock-release",
       "lua",    "--warmup",     "0.5",         "--json",           "--quiet", "--no-populate"});
  ASSERT_TRUE(r.ok) << r.error;
  const Options& o = r.options;
  EXPECT_EQ(o.host, "localhost");
  EXPECT_EQ(o.port, 7000);
  EXPECT_EQ(o.workload, WorkloadKind::kMixed);
  EXPECT_EQ(o.threads, 2);
  EXPECT_EQ(o.connections, 8);
  EXPECT_EQ(o.pipeline, 16);
  EXPECT_EQ(o.requests, 5000u);
  EXPECT_EQ(o.duration_s, 0);
  EXPECT_EQ(o.rate, 20000);
  EXPECT_EQ(o.distribution, Distribution::kZipf);
  EXPECT_DOUBLE_EQ(o.zipf_exponent, 1.2);
  EXPECT_EQ(o.ratio_reads, 3u);
  EXPECT_EQ(o.ratio_writes, 1u);
  EXPECT_EQ(o.ratelimit_form, RateLimitForm::kLua);
  EXPECT_EQ(o.lock_release, LockRelease::kLua);
  EXPECT_DOUBLE_EQ(o.warmup_s, 0.5);
  EXPECT_TRUE(o.json);
  EXPECT_TRUE(o.quiet);
  EXPECT_FALSE(o.populate);
}

TEST(OptionsTest, BinaryProtocolWithBatchingByDefault) {
  ParseResult r = Parse({"--protocol", "binary"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.options.protocol, Protocol::kBinary);
  EXPECT_TRUE(r.options.batching);
  EXPECT_EQ(r.options.sockets, 0);
  r = Parse({"--protocol", "binary", "--no-batching", "--sockets", "4"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.options.batching);
  EXPECT_EQ(r.options.sockets, 4);
  EXPECT_FALSE(Parse({"--sockets", "0"}).ok);
}

TEST(OptionsTest, Help) {
  ParseResult r = Parse({"--workload", "get", "--help"});
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.help);
  EXPECT_NE(Usage().find("--workload"), std::string::npos);
}

struct BadCase {
  std::vector<std::string> args;
  std::string message;  // a part of the error
};

TEST(OptionsTest, BadInputGivesClearErrors) {
  const BadCase cases[] = {
      {{"--port", "0"}, "--port: '0' is not an integer from 1 to 65535"},
      {{"--port", "70000"}, "--port: '70000'"},
      {{"--port", "12x"}, "--port: '12x'"},
      {{"--port"}, "--port needs a value"},
      {{"--threads", "-1"}, "--threads: '-1'"},
      {{"--workload", "scan"}, "--workload: 'scan' is not one of ping, get"},
      {{"--protocol", "http"}, "--protocol: 'http' is not resp or binary"},
      {{"--distribution", "normal"}, "--distribution: 'normal' is not uniform or zipf"},
      {{"--zipf-exponent", "0"}, "--zipf-exponent: '0'"},
      {{"--ratio", "9"}, "--ratio: '9' is not reads:writes"},
      {{"--ratio", "0:0"}, "--ratio: '0:0'"},
      {{"--ratio", "a:1"}, "--ratio: 'a:1'"},
      {{"--rate", "0"}, "--rate: '0'"},
      {{"--rate", "fast"}, "--rate: 'fast'"},
      {{"--duration", "-3"}, "--duration: '-3'"},
      {{"--duration", "nan"}, "--duration: 'nan'"},
      {{"--requests", "10", "--duration", "5"}, "--requests and --duration are exclusive"},
      {{"--threads", "4", "--connections", "2"},
       "--connections (2) must be at least --threads (4)"},
      {{"--bogus"}, "unknown flag --bogus"},
      {{"get"}, "unexpected argument 'get'"},
      {{"--json=yes"}, "--json takes no value"},
      {{"--ratelimit-form", "cell"}, "--ratelimit-form: 'cell' is not native, gcra or lua"},
      {{"--lock-release", "x"}, "--lock-release: 'x' is not native or lua"},
      {{"--host", ""}, "--host: needs a host"},
      {{"--protocol", "binary", "--cluster", "yes"}, "--cluster: 'yes' is not auto, on or off"},
      {{"--protocol", "binary", "--secret-file", ""}, "--secret-file: needs a path"},
      {{"--cluster", "on"}, "need --protocol binary"},
      {{"--secret-file", "/tmp/s"}, "need --protocol binary"},
  };
  for (const BadCase& c : cases) {
    ParseResult r = Parse(c.args);
    EXPECT_FALSE(r.ok) << c.args[0];
    EXPECT_NE(r.error.find(c.message), std::string::npos)
        << "error '" << r.error << "' does not say '" << c.message << "'";
  }
}

TEST(Options, ClusterFlags) {
  ParseResult r = Parse({"--protocol", "binary"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.options.cluster, ClusterMode::kAuto);
  EXPECT_TRUE(r.options.secret_file.empty());
  r = Parse({"--protocol", "binary", "--cluster", "on", "--secret-file", "/run/secret"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.options.cluster, ClusterMode::kOn);
  EXPECT_EQ(r.options.secret_file, "/run/secret");
  r = Parse({"--cluster=off"});  // the single-endpoint path, for either protocol
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.options.cluster, ClusterMode::kOff);
}

}  // namespace
}  // namespace keep::bench
