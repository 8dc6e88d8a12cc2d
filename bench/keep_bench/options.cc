#include "bench/keep_bench/options.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <string_view>

namespace keep::bench {
namespace {

bool ParseU64(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) return false;
  // std::from_chars for double is in libstdc++ 11+, and it ignores the locale.
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(*out);
}

std::string Bad(std::string_view flag, std::string_view value, std::string_view expected) {
  return "--" + std::string(flag) + ": '" + std::string(value) + "' is not " +
         std::string(expected);
}

// Parses an integer flag within [min, max] into *field.
template <typename T>
std::function<std::string(Options&, std::string_view)> IntFlag(std::string_view name,
                                                               T Options::*field, uint64_t min,
                                                               uint64_t max) {
  return [=](Options& o, std::string_view v) -> std::string {
    uint64_t value = 0;
    if (!ParseU64(v, &value) || value < min || value > max) {
      return Bad(name, v, "an integer from " + std::to_string(min) + " to " + std::to_string(max));
    }
    o.*field = static_cast<T>(value);
    return "";
  };
}

struct Flag {
  bool takes_value;
  std::function<std::string(Options&, std::string_view)> apply;
};

const std::map<std::string, Flag, std::less<>>& Flags() {
  static const std::map<std::string, Flag, std::less<>> flags = {
      {"host",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          if (v.empty()) return "--host: needs a host name or address";
          o.host = std::string(v);
          return "";
        }}},
      {"port", {true, IntFlag("port", &Options::port, 1, 65535)}},
      {"protocol",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          if (v == "resp")
            o.protocol = Protocol::kResp;
          else if (v == "binary")
            o.protocol = Protocol::kBinary;
          else
            return Bad("protocol", v, "resp or binary");
          return "";
        }}},
      {"workload",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          static const std::map<std::string_view, WorkloadKind> names = {
              {"ping", WorkloadKind::kPing}, {"get", WorkloadKind::kGet},
              {"set", WorkloadKind::kSet},   {"mixed", WorkloadKind::kMixed},
              {"incr", WorkloadKind::kIncr}, {"ratelimit", WorkloadKind::kRateLimit},
              {"lock", WorkloadKind::kLock}, {"coord", WorkloadKind::kCoord}};
          auto it = names.find(v);
          if (it == names.end()) {
            return Bad("workload", v, "one of ping, get, set, mixed, incr, ratelimit, lock, coord");
          }
          o.workload = it->second;
          return "";
        }}},
      {"threads", {true, IntFlag("threads", &Options::threads, 1, 256)}},
      {"connections", {true, IntFlag("connections", &Options::connections, 1, 100000)}},
      {"pipeline", {true, IntFlag("pipeline", &Options::pipeline, 1, 65536)}},
      {"requests", {true, IntFlag("requests", &Options::requests, 1, uint64_t{1} << 62)}},
      {"duration",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          double d = 0;
          if (!ParseDouble(v, &d) || d <= 0 || d > 86400) {
            return Bad("duration", v, "a number of seconds above 0 and at most 86400");
          }
          o.duration_s = d;
          return "";
        }}},
      {"rate",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          double r = 0;
          if (!ParseDouble(v, &r) || r <= 0 || r > 1e9) {
            return Bad("rate", v, "a request rate above 0 and at most 1e9 per second");
          }
          o.rate = r;
          return "";
        }}},
      {"keys", {true, IntFlag("keys", &Options::keys, 1, uint64_t{1} << 40)}},
      {"value-size", {true, IntFlag("value-size", &Options::value_size, 0, 64u << 20)}},
      {"distribution",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          if (v == "uniform")
            o.distribution = Distribution::kUniform;
          else if (v == "zipf")
            o.distribution = Distribution::kZipf;
          else
            return Bad("distribution", v, "uniform or zipf");
          return "";
        }}},
      {"zipf-exponent",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          double s = 0;
          if (!ParseDouble(v, &s) || s <= 0 || s > 10) {
            return Bad("zipf-exponent", v, "a number above 0 and at most 10");
          }
          o.zipf_exponent = s;
          return "";
        }}},
      {"ratio",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          auto colon = v.find(':');
          uint64_t r = 0, w = 0;
          if (colon == std::string_view::npos || !ParseU64(v.substr(0, colon), &r) ||
              !ParseU64(v.substr(colon + 1), &w) || r + w == 0 || r > 1000000 || w > 1000000) {
            return Bad("ratio", v, "reads:writes, e.g. 9:1 (not both 0)");
          }
          o.ratio_reads = static_cast<uint32_t>(r);
          o.ratio_writes = static_cast<uint32_t>(w);
          return "";
        }}},
      {"ratelimit-form",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          if (v == "native")
            o.ratelimit_form = RateLimitForm::kNative;
          else if (v == "gcra")
            o.ratelimit_form = RateLimitForm::kGcra;
          else if (v == "lua")
            o.ratelimit_form = RateLimitForm::kLua;
          else
            return Bad("ratelimit-form", v, "native, gcra or lua");
          return "";
        }}},
      {"ratelimit-limit",
       {true, IntFlag("ratelimit-limit", &Options::ratelimit_limit, 1, uint64_t{1} << 62)}},
      {"ratelimit-window-ms",
       {true, IntFlag("ratelimit-window-ms", &Options::ratelimit_window_ms, 1, uint64_t{1} << 40)}},
      {"lock-release",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          if (v == "native")
            o.lock_release = LockRelease::kNative;
          else if (v == "lua")
            o.lock_release = LockRelease::kLua;
          else
            return Bad("lock-release", v, "native or lua");
          return "";
        }}},
      {"lock-ttl-ms", {true, IntFlag("lock-ttl-ms", &Options::lock_ttl_ms, 1, uint64_t{1} << 40)}},
      {"warmup",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          double d = 0;
          if (!ParseDouble(v, &d) || d < 0 || d > 3600) {
            return Bad("warmup", v, "a number of seconds from 0 to 3600");
          }
          o.warmup_s = d;
          return "";
        }}},
      {"seed", {true, IntFlag("seed", &Options::seed, 0, ~uint64_t{0})}},
      {"json",
       {false,
        [](Options& o, std::string_view) -> std::string {
          o.json = true;
          return "";
        }}},
      {"quiet",
       {false,
        [](Options& o, std::string_view) -> std::string {
          o.quiet = true;
          return "";
        }}},
      {"no-populate",
       {false,
        [](Options& o, std::string_view) -> std::string {
          o.populate = false;
          return "";
        }}},
      {"populate-only",
       {false,
        [](Options& o, std::string_view) -> std::string {
          o.populate_only = true;
          return "";
        }}},
      {"no-batching",
       {false,
        [](Options& o, std::string_view) -> std::string {
          o.batching = false;
          return "";
        }}},
      {"sockets", {true, IntFlag("sockets", &Options::sockets, 1, 10000)}},
      {"cluster",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          if (v == "auto")
            o.cluster = ClusterMode::kAuto;
          else if (v == "on")
            o.cluster = ClusterMode::kOn;
          else if (v == "off")
            o.cluster = ClusterMode::kOff;
          else
            return Bad("cluster", v, "auto, on or off");
          return "";
        }}},
      {"secret-file",
       {true,
        [](Options& o, std::string_view v) -> std::string {
          if (v.empty()) return "--secret-file: needs a path";
          o.secret_file = std::string(v);
          return "";
        }}},
  };
  return flags;
}

}  // namespace

ParseResult ParseOptions(const std::vector<std::string>& args) {
  ParseResult result;
  Options& o = result.options;
  bool saw_requests = false;
  bool saw_duration = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      result.ok = true;
      result.help = true;
      return result;
    }
    if (!arg.starts_with("--")) {
      result.error = "unexpected argument '" + std::string(arg) + "' (flags start with --)";
      return result;
    }
    arg.remove_prefix(2);
    std::string_view name = arg;
    std::string_view value;
    bool inline_value = false;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    auto it = Flags().find(name);
    if (it == Flags().end()) {
      result.error = "unknown flag --" + std::string(name) + " (see --help)";
      return result;
    }
    if (it->second.takes_value && !inline_value) {
      if (i + 1 >= args.size()) {
        result.error = "--" + std::string(name) + " needs a value";
        return result;
      }
      value = args[++i];
    } else if (!it->second.takes_value && inline_value) {
      result.error = "--" + std::string(name) + " takes no value";
      return result;
    }
    if (std::string error = it->second.apply(o, value); !error.empty()) {
      result.error = error;
      return result;
    }
    saw_requests |= name == "requests";
    saw_duration |= name == "duration";
  }
  if (saw_requests && saw_duration) {
    result.error = "--requests and --duration are exclusive: give one bound for the run";
    return result;
  }
  if (!saw_requests && !saw_duration) o.duration_s = 10;
  if (o.protocol != Protocol::kBinary &&
      (o.cluster == ClusterMode::kOn || !o.secret_file.empty())) {
    result.error =
        "--cluster on and --secret-file need --protocol binary (cluster routing is libkeep's)";
    return result;
  }
  if (o.connections < o.threads) {
    result.error = "--connections (" + std::to_string(o.connections) +
                   ") must be at least --threads (" + std::to_string(o.threads) +
                   "): connections are the total, spread over the threads";
    return result;
  }
  result.ok = true;
  return result;
}

std::string Usage() {
  return R"(usage: keep-bench [flags]

Target
  --host H                 server address (default 127.0.0.1)
  --port P                 server port (default 6379)
  --protocol resp|binary   wire protocol (default resp). binary goes through libkeep: the
                           --connections are concurrent callers (each --pipeline requests in
                           flight, or its share of --rate) sharing --sockets libkeep connections
                           (default one per thread); ping get set mixed incr,
                           ratelimit/lock/coord native
  --no-batching            binary: one write per request instead of libkeep's batching
  --sockets S              binary: libkeep connections the callers share (caller i on i % S)
  --cluster auto|on|off    binary: route each key to the shard owning its slot across the
                           cluster's members, following the view most members report, BUSY and
                           MOVED (default auto: when the server's TOPOLOGY is a cluster's;
                           on: fail unless it is). Each socket is then one connection per shard
  --secret-file PATH       binary: the cluster secret that keys slots (else KEEP_SECRET), so keys
                           go straight to their owners; without it keyed clusters cost a MOVED
                           per request
Load shape
  --workload W             ping | get | set | mixed | incr | ratelimit | lock | coord (default get)
  --threads T              client threads, each with its own epoll loop (default 1)
  --connections C          connections in total, connection i on thread i % T (default 50)
  --pipeline P             requests in flight per connection (default 1)
  --requests N | --duration S   measured requests in total, or seconds (default --duration 10)
  --rate R                 open loop: R requests/s in total at fixed intervals per connection;
                           latency counts from the intended send time (default: closed loop)
  --warmup S               seconds of load before measuring (default 0)
Keys and values
  --keys K                 key space size, keys key:<n> zero-padded to a fixed width (default 10000)
  --value-size B           value bytes for SET (default 128)
  --distribution uniform|zipf, --zipf-exponent S (default uniform, 0.99)
  --no-populate            do not SET every key before get, mixed and coord
  --populate-only          SET every key, then exit
  --seed N                 random seed (default 1)
Workload settings
  --ratio R:W              mixed: reads to writes (default 9:1)
  --ratelimit-form native|gcra|lua   RATE.FIXED, CL.THROTTLE (GCRA, burst = limit per window),
                                  or the fixed-window Lua recipe by EVALSHA
  --ratelimit-limit N, --ratelimit-window-ms MS   (default 100 per 1000 ms)
  --lock-release native|lua       DELIFEQ, or a release-if-owner script by EVALSHA
  --lock-ttl-ms MS         lock lease (default 10000)
Output
  --json                   print one JSON object on stdout
  --quiet                  no progress lines on stderr
Exit status: 0 done, 1 bad flags, 2 the server is unreachable, closed a connection or sent a
reply that cannot be parsed, 3 the server refused the workload's setup (e.g. SCRIPT LOAD).
)";
}

const char* ProtocolName(Protocol p) { return p == Protocol::kResp ? "resp" : "binary"; }

const char* WorkloadName(WorkloadKind w) {
  switch (w) {
    case WorkloadKind::kPing:
      return "ping";
    case WorkloadKind::kGet:
      return "get";
    case WorkloadKind::kSet:
      return "set";
    case WorkloadKind::kMixed:
      return "mixed";
    case WorkloadKind::kIncr:
      return "incr";
    case WorkloadKind::kRateLimit:
      return "ratelimit";
    case WorkloadKind::kLock:
      return "lock";
    case WorkloadKind::kCoord:
      return "coord";
  }
  return "?";
}

const char* DistributionName(Distribution d) {
  return d == Distribution::kUniform ? "uniform" : "zipf";
}
const char* RateLimitFormName(RateLimitForm f) {
  switch (f) {
    case RateLimitForm::kNative:
      return "native";
    case RateLimitForm::kGcra:
      return "gcra";
    case RateLimitForm::kLua:
      return "lua";
  }
  return "?";
}
const char* LockReleaseName(LockRelease r) { return r == LockRelease::kNative ? "native" : "lua"; }
const char* ClusterModeName(ClusterMode m) {
  return m == ClusterMode::kAuto ? "auto" : m == ClusterMode::kOn ? "on" : "off";
}

bool WorkloadReadsKeys(WorkloadKind w) {
  return w == WorkloadKind::kGet || w == WorkloadKind::kMixed || w == WorkloadKind::kCoord;
}

}  // namespace keep::bench
