// keep-bench: a load generator for Keep and redis-server, over RESP or (through libkeep) Keep's
// binary protocol. See bench/README.md.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/keep_bench/binary_driver.h"
#include "bench/keep_bench/connection.h"
#include "bench/keep_bench/driver.h"
#include "bench/keep_bench/options.h"
#include "bench/keep_bench/protocol.h"
#include "bench/keep_bench/report.h"
#include "bench/keep_bench/workload.h"

namespace keep::bench {
namespace {

constexpr int kExitUsage = 1;
constexpr int kExitServer = 2;
constexpr int kExitRefused = 3;

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "keep-bench: %s\n", message.c_str());
  return code;
}

bool UsesLockScript(const Options& o) {
  return (o.workload == WorkloadKind::kLock || o.workload == WorkloadKind::kCoord) &&
         o.lock_release == LockRelease::kLua;
}

// SCRIPT LOAD; 0 with *sha set, or an exit code.
int LoadScript(BlockingConnection& setup, const char* script, std::string* sha) {
  std::string_view args[] = {"SCRIPT", "LOAD", script};
  Reply reply;
  std::string text;
  std::string error;
  if (!setup.Call(args, &reply, &text, &error)) return Fail(kExitServer, error);
  if (reply.kind == ReplyKind::kError) {
    // Redis-style errors echo the arguments, here the whole script: keep the message readable.
    if (auto cut = text.find(", with args"); cut != std::string::npos) text.resize(cut);
    return Fail(kExitRefused, "the server refused SCRIPT LOAD (-" + text +
                                  "): this workload needs scripting; try the native form");
  }
  *sha = text;
  return 0;
}

// SETs every key with pipelined batches so reads find their keys.
int Populate(BlockingConnection& setup, const Codec& codec, const Options& o, uint64_t* done) {
  constexpr uint64_t kBatch = 1000;
  const int width = KeyWidth(o.keys);
  const std::string value(o.value_size, 'v');
  std::string batch;
  std::string error;
  for (uint64_t first = 0; first < o.keys; first += kBatch) {
    uint64_t last = std::min(o.keys, first + kBatch);
    batch.clear();
    for (uint64_t i = first; i < last; ++i) {
      std::string key = std::to_string(i);
      key = "key:" + std::string(static_cast<size_t>(width) - key.size(), '0') + key;
      std::string_view args[] = {"SET", key, value};
      codec.Encode(args, &batch, nullptr);
    }
    if (!setup.Send(batch, &error)) return Fail(kExitServer, error);
    for (uint64_t i = first; i < last; ++i) {
      Reply reply;
      std::string text;
      if (!setup.ReadReply(&reply, &text, &error)) return Fail(kExitServer, error);
      if (reply.kind == ReplyKind::kError) {
        return Fail(kExitRefused, "populating the keys failed: the server answered -" + text);
      }
    }
    *done = last;
  }
  return 0;
}

int Main(int argc, char** argv) {
  ParseResult parsed = ParseOptions(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok) return Fail(kExitUsage, parsed.error);
  if (parsed.help) {
    std::fputs(Usage().c_str(), stdout);
    return 0;
  }
  const Options& o = parsed.options;
  if (o.protocol == Protocol::kBinary) return RunBinary(o);
  std::string error;
  std::unique_ptr<Codec> codec = MakeCodec(o.protocol, &error);
  if (!codec) return Fail(kExitUsage, error);

  int setup_fd = ConnectTcp(o.host, o.port, &error);
  if (setup_fd < 0) return Fail(kExitServer, error);
  BlockingConnection setup(setup_fd, *codec);

  Results results;
  if (o.populate_only || (o.populate && WorkloadReadsKeys(o.workload))) {
    if (int rc = Populate(setup, *codec, o, &results.populated); rc != 0) return rc;
    if (o.populate_only) {
      if (o.json) {
        std::printf("{\"populated\":%llu}\n", static_cast<unsigned long long>(results.populated));
      } else if (!o.quiet) {
        std::printf("populated %llu keys\n", static_cast<unsigned long long>(results.populated));
      }
      return 0;
    }
  }
  std::string ratelimit_sha;
  std::string lock_sha;
  if (o.workload == WorkloadKind::kRateLimit && o.ratelimit_form == RateLimitForm::kLua) {
    if (int rc = LoadScript(setup, Workload::kRateLimitScript, &ratelimit_sha); rc != 0) return rc;
  }
  if (UsesLockScript(o)) {
    if (int rc = LoadScript(setup, Workload::kLockReleaseScript, &lock_sha); rc != 0) return rc;
  }
  Workload workload(o, *codec, ratelimit_sha, lock_sha);

  std::vector<ThreadConfig> configs(static_cast<size_t>(o.threads));
  for (int i = 0; i < o.connections; ++i) {
    int fd = ConnectTcp(o.host, o.port, &error);
    if (fd < 0 || !SetNonBlocking(fd, &error)) {
      return Fail(kExitServer, error + " (connection " + std::to_string(i + 1) + " of " +
                                   std::to_string(o.connections) + ")");
    }
    ThreadConfig& c = configs[static_cast<size_t>(i % o.threads)];
    c.fds.push_back(fd);
    c.indexes.push_back(i);
  }

  RunClock clock;
  clock.start_ns = NowNs();
  clock.measure_start_ns = clock.start_ns + static_cast<int64_t>(o.warmup_s * 1e9);
  clock.measure_end_ns = o.requests > 0
                             ? INT64_MAX
                             : clock.measure_start_ns + static_cast<int64_t>(o.duration_s * 1e9);
  std::atomic<bool> abort{false};
  std::vector<ThreadProgress> progress(static_cast<size_t>(o.threads));
  std::vector<ThreadStats> stats(static_cast<size_t>(o.threads));
  std::atomic<int> running{o.threads};
  std::vector<std::thread> threads;
  for (int i = 0; i < o.threads; ++i) {
    ThreadConfig& c = configs[static_cast<size_t>(i)];
    c.options = &o;
    c.codec = codec.get();
    c.workload = &workload;
    c.clock = clock;
    c.quota = o.requests / static_cast<uint64_t>(o.threads) +
              (static_cast<uint64_t>(i) < o.requests % static_cast<uint64_t>(o.threads) ? 1 : 0);
    c.abort = &abort;
    c.progress = &progress[static_cast<size_t>(i)];
    threads.emplace_back([&c, &stats, &running, i] {
      RunLoadThread(c, &stats[static_cast<size_t>(i)]);
      running.fetch_sub(1);
    });
  }

  // Progress once per second on stderr, for runs long enough to want it.
  const bool long_run = o.requests > 0 || o.warmup_s + o.duration_s > 3;
  uint64_t last_replies = 0;
  int64_t next_tick = clock.start_ns + 1'000'000'000;
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    int64_t now = NowNs();
    if (now < next_tick) continue;
    uint64_t replies = 0;
    uint64_t errors = 0;
    for (auto& p : progress) {
      replies += p.replies.load(std::memory_order_relaxed);
      errors += p.errors.load(std::memory_order_relaxed);
    }
    double elapsed = static_cast<double>(now - clock.start_ns) / 1e9;
    if (!o.quiet && long_run && (o.requests == 0 || elapsed >= 3)) {
      std::fprintf(stderr, "keep-bench: %5.1fs %10llu req/s  replies %llu  errors %llu%s\n",
                   elapsed, static_cast<unsigned long long>(replies - last_replies),
                   static_cast<unsigned long long>(replies),
                   static_cast<unsigned long long>(errors),
                   now < clock.measure_start_ns ? "  (warm-up)" : "");
    }
    last_replies = replies;
    next_tick += 1'000'000'000;
  }
  for (auto& t : threads) t.join();

  int64_t last_reply = clock.measure_start_ns;
  for (ThreadStats& s : stats) {
    if (!s.fatal.empty()) return Fail(kExitServer, s.fatal);
    results.histogram.Merge(s.histogram);
    results.requests += s.measured;
    results.requests_total += s.total;
    results.errors += s.errors;
    results.nils += s.nils;
    results.follow_ups += s.follow_ups;
    results.unfinished += s.unfinished;
    last_reply = std::max(last_reply, s.last_reply_ns);
    if (results.first_error.empty()) results.first_error = s.first_error;
  }
  results.seconds = o.requests > 0 ? static_cast<double>(last_reply - clock.measure_start_ns) / 1e9
                                   : o.duration_s;
  results.throughput =
      results.seconds > 0 ? static_cast<double>(results.requests) / results.seconds : 0;
  if (o.json) {
    std::printf("%s\n", FormatJson(o, results).c_str());
  } else {
    std::fputs(FormatTable(o, results).c_str(), stdout);
  }
  if (results.errors > 0 && !o.quiet) {
    std::fprintf(stderr, "keep-bench: %llu error replies (first: -%s)\n",
                 static_cast<unsigned long long>(results.errors), results.first_error.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace keep::bench

int main(int argc, char** argv) { return keep::bench::Main(argc, argv); }
