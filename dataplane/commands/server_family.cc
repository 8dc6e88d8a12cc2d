// Server commands: INFO, CONFIG, COMMAND, TIME, SHUTDOWN, DEBUG, MEMORY.
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>

#include "dataplane/commands/command_syntax.h"
#include "dataplane/commands/command_table.h"
#include "dataplane/commands/family_util.h"
#include "dataplane/commands/glob_util.h"
#include "dataplane/commands/shard_services.h"
#include "dataplane/commands/string_util.h"
#include "dataplane/core/clock.h"

namespace keep::commands {

namespace {

void UnknownSubcommand(CommandContext& ctx, std::string_view command) {
  ctx.reply.Error(UnknownSubcommandError(ctx.args[1], command));
}

void SubcommandArity(CommandContext& ctx, std::string_view command) {
  ctx.reply.Error("ERR wrong number of arguments for '" + std::string(command) + "|" +
                  AsciiLower(ctx.args[1]) + "' command");
}

// --- INFO ---

// Each shard's part carries its ShardStats as raw bytes; only this file reads them back.
void InfoPart(CommandContext& ctx) {
  ShardStats stats;
  ctx.services->CollectStats(&stats);
  ctx.part->resp.assign(reinterpret_cast<const char*>(&stats), sizeof(stats));
}

ShardStats SumStats(const CombineInput& input) {
  ShardStats total;
  constexpr size_t kFields = sizeof(ShardStats) / sizeof(uint64_t);
  static_assert(kFields * sizeof(uint64_t) == sizeof(ShardStats));
  auto* sum = reinterpret_cast<uint64_t*>(&total);
  uint64_t max_lag = 0;
  uint64_t max_turn = 0;
  uint64_t max_memory = 0;
  for (PartResult* part : input.parts) {
    if (part == nullptr || part->resp.size() != sizeof(ShardStats)) continue;
    uint64_t values[kFields];
    std::memcpy(values, part->resp.data(), sizeof(values));
    for (size_t i = 0; i < kFields; ++i) sum[i] += values[i];
    ShardStats shard;
    std::memcpy(&shard, part->resp.data(), sizeof(shard));
    max_lag = std::max(max_lag, shard.expiry_lag_ms);
    max_turn = std::max(max_turn, shard.eventloop_duration_max_us);
    max_memory = std::max(max_memory, shard.maxmemory);
  }
  total.expiry_lag_ms = max_lag;
  total.eventloop_duration_max_us = max_turn;
  total.maxmemory = max_memory;  // every shard reports the member's cap
  return total;
}

std::string HumanBytes(uint64_t bytes) {
  char buf[64];
  double value = static_cast<double>(bytes);
  if (bytes < 1024)
    snprintf(buf, sizeof(buf), "%lluB", static_cast<unsigned long long>(bytes));
  else if (value < 1024.0 * 1024)
    snprintf(buf, sizeof(buf), "%.2fK", value / 1024);
  else if (value < 1024.0 * 1024 * 1024)
    snprintf(buf, sizeof(buf), "%.2fM", value / 1024 / 1024);
  else
    snprintf(buf, sizeof(buf), "%.2fG", value / 1024 / 1024 / 1024);
  return buf;
}

uint64_t ResidentBytes() {
  FILE* statm = fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long long pages_total = 0, pages_resident = 0;
  int matched = fscanf(statm, "%llu %llu", &pages_total, &pages_resident);
  fclose(statm);
  return matched == 2 ? pages_resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

void Line(std::string* out, std::string_view key, std::string_view value) {
  out->append(key);
  out->push_back(':');
  out->append(value);
  out->append("\r\n");
}

void Line(std::string* out, std::string_view key, uint64_t value) {
  Line(out, key, std::to_string(value));
}

// One shard ran the part and the combiner formats; `facts` come from that part's shard, so the
// combiner gets them through a static copy made when the part ran on the originating shard.
thread_local const ServerFacts* info_facts = nullptr;
// Likewise the key class table (the same on every shard).
thread_local const core::KeyClassTable* info_classes = nullptr;

std::string_view MaxmemoryPolicy() {
  return core::RedisPolicyName(info_classes->PolicyOf(core::KeyClassTable::kDefaultClass));
}

void CombineInfo(const CombineInput& input, proto::ReplyWriter& reply) {
  ShardStats stats = SumStats(input);
  const ServerFacts& facts = *info_facts;
  std::vector<std::string> wanted;
  for (size_t i = 1; i < input.args.size(); ++i) wanted.push_back(AsciiLower(input.args[i]));
  bool everything = wanted.empty();
  for (const std::string& w : wanted) {
    if (w == "all" || w == "everything" || w == "default") everything = true;
  }
  auto want = [&](std::string_view section) {
    if (everything) return true;
    for (const std::string& w : wanted) {
      if (w == section) return true;
    }
    return false;
  };
  int64_t now_ms = core::WallMillis();
  std::string out;
  auto section = [&](std::string_view title) {
    if (!out.empty()) out.append("\r\n");
    out.append("# ").append(title).append("\r\n");
  };
  if (want("server")) {
    section("Server");
    utsname name{};
    uname(&name);
    Line(&out, "redis_version", kRedisCompatVersion);
    Line(&out, "keep_version", facts.version);
    Line(&out, "redis_mode", facts.cluster_enabled ? "cluster" : "standalone");
    Line(&out, "os", std::string(name.sysname) + " " + name.release + " " + name.machine);
    Line(&out, "arch_bits", "64");
    // Readiness from epoll; the reads and writes themselves batched through io_uring where the
    // kernel allows it (every shard, or none: they share one kernel).
    Line(&out, "multiplexing_api", stats.io_uring_shards > 0 ? "epoll+io_uring" : "epoll");
    Line(&out, "process_id", static_cast<uint64_t>(facts.pid));
    Line(&out, "run_id", facts.run_id);
    Line(&out, "tcp_port", static_cast<uint64_t>(facts.tcp_port));
    Line(&out, "shards", static_cast<uint64_t>(facts.shard_count));
    uint64_t uptime_s = static_cast<uint64_t>((now_ms - facts.start_ms) / 1000);
    Line(&out, "server_time_usec", static_cast<uint64_t>(now_ms) * 1000);
    Line(&out, "uptime_in_seconds", uptime_s);
    Line(&out, "uptime_in_days", uptime_s / 86400);
    Line(&out, "executable", facts.executable);
    Line(&out, "config_file", facts.config_file);
  }
  if (want("clients")) {
    section("Clients");
    Line(&out, "connected_clients", stats.connected_clients);
    Line(&out, "client_recent_max_input_buffer", stats.client_query_buffer_bytes);
    Line(&out, "client_recent_max_output_buffer", stats.client_output_buffer_bytes);
    Line(&out, "blocked_clients", uint64_t{0});
  }
  if (want("memory")) {
    section("Memory");
    uint64_t rss = ResidentBytes();
    Line(&out, "used_memory", stats.used_bytes);
    Line(&out, "used_memory_human", HumanBytes(stats.used_bytes));
    Line(&out, "used_memory_dataset", stats.dataset_bytes);
    Line(&out, "used_memory_rss", rss);
    Line(&out, "used_memory_rss_human", HumanBytes(rss));
    // What the shards' stores hold from the OS, free space for reuse included.
    Line(&out, "used_memory_reserved", stats.reserved_bytes);
    Line(&out, "maxmemory", stats.maxmemory);
    Line(&out, "maxmemory_human", HumanBytes(stats.maxmemory));
    // As Redis: free space inside the allocator's pages, and its share of what they hold.
    Line(&out, "allocator_frag_bytes", stats.allocator_frag_bytes);
    {
      char ratio[32];
      const uint64_t live = stats.used_bytes;
      snprintf(ratio, sizeof(ratio), "%.2f",
               live == 0 ? 1.0
                         : static_cast<double>(live + stats.allocator_frag_bytes) /
                               static_cast<double>(live));
      Line(&out, "allocator_frag_ratio", std::string(ratio));
    }
    Line(&out, "active_defrag_running", stats.active_defrag_running);
    Line(&out, "maxmemory_policy", MaxmemoryPolicy());
    Line(&out, "mem_clients_normal",
         stats.client_output_buffer_bytes + stats.client_query_buffer_bytes);
  }
  if (want("persistence")) {
    section("Persistence");
    Line(&out, "loading", uint64_t{0});
    Line(&out, "rdb_changes_since_last_save", uint64_t{0});
    Line(&out, "aof_enabled", uint64_t{0});
  }
  if (want("stats")) {
    section("Stats");
    Line(&out, "total_connections_received", stats.total_connections_received);
    Line(&out, "total_commands_processed", stats.total_commands_processed);
    Line(&out, "total_net_input_bytes", stats.net_input_bytes);
    Line(&out, "total_net_output_bytes", stats.net_output_bytes);
    Line(&out, "rejected_connections", stats.rejected_connections);
    Line(&out, "expired_keys", stats.expired_keys);
    Line(&out, "expiry_lag_ms", stats.expiry_lag_ms);
    Line(&out, "evicted_keys", stats.evicted_keys);
    Line(&out, "active_defrag_hits", stats.active_defrag_hits);
    Line(&out, "active_defrag_misses", stats.active_defrag_misses);
    Line(&out, "keyspace_hits", stats.keyspace_hits);
    Line(&out, "keyspace_misses", stats.keyspace_misses);
    Line(&out, "cross_shard_requests", stats.cross_shard_requests);
    Line(&out, "cross_shard_direct_replies", stats.cross_shard_direct_replies);
    Line(&out, "socket_system_calls", stats.socket_system_calls);
    Line(&out, "pubsub_dropped_events", stats.pubsub_dropped_events);
    Line(&out, "eventloop_cycles", stats.eventloop_cycles);
    Line(&out, "eventloop_duration_sum", stats.eventloop_duration_sum_us);
    Line(&out, "eventloop_duration_max", stats.eventloop_duration_max_us);
  }
  if (want("replication")) {
    section("Replication");
    Line(&out, "role", "master");
    Line(&out, "connected_slaves", uint64_t{0});
  }
  if (want("cpu")) {
    section("CPU");
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    char buf[64];
    snprintf(buf, sizeof(buf), "%ld.%06ld", static_cast<long>(usage.ru_stime.tv_sec),
             static_cast<long>(usage.ru_stime.tv_usec));
    Line(&out, "used_cpu_sys", buf);
    snprintf(buf, sizeof(buf), "%ld.%06ld", static_cast<long>(usage.ru_utime.tv_sec),
             static_cast<long>(usage.ru_utime.tv_usec));
    Line(&out, "used_cpu_user", buf);
  }
  if (want("cluster")) {
    // Cluster-aware clients (redis-py's RedisCluster) check this before trusting CLUSTER SLOTS.
    section("Cluster");
    Line(&out, "cluster_enabled", uint64_t{facts.cluster_enabled ? 1u : 0u});
  }
  if (want("keyspace")) {
    section("Keyspace");
    if (stats.keys > 0) {
      Line(&out, "db0",
           "keys=" + std::to_string(stats.keys) +
               ",expires=" + std::to_string(stats.keys_with_expiry) + ",avg_ttl=0");
    }
  }
  if (want("keyspace") || want("keyclasses")) {
    // Keep's key classes (design §2.5), after Redis's own section so clients parse both.
    section("Keyclasses");
    for (size_t c = 0; c < info_classes->size() && c < kMaxReportedClasses; ++c) {
      Line(&out, "class_" + std::string(info_classes->NameOf(static_cast<uint8_t>(c))),
           "policy=" +
               std::string(core::PolicyName(info_classes->PolicyOf(static_cast<uint8_t>(c)))) +
               ",keys=" + std::to_string(stats.class_keys[c]) +
               ",bytes=" + std::to_string(stats.class_bytes[c]) +
               ",evicted_keys=" + std::to_string(stats.class_evicted[c]) +
               ",expired_keys=" + std::to_string(stats.class_expired[c]));
    }
  }
  reply.Verbatim("txt", out);
}

void Info(CommandContext& ctx) {
  info_facts = &ctx.services->facts();
  info_classes = &ctx.store.key_classes();
  InfoPart(ctx);
}

// --- MEMORY ---

Routing MemoryRoute(std::span<const std::string_view> args) {
  if (EqualsIgnoreCase(args[1], "usage") && args.size() >= 3) return Routing::kSingleKey;
  if (EqualsIgnoreCase(args[1], "stats") && args.size() == 2) return Routing::kAllShards;
  return Routing::kLocal;
}

// MEMORY USAGE key [SAMPLES count]: the bytes the key costs (Store::KeyFootprint); SAMPLES is
// accepted as Redis does and changes nothing (a string has no elements to sample).
void MemoryUsage(CommandContext& ctx) {
  for (size_t i = 3; i < ctx.args.size(); ++i) {
    if (EqualsIgnoreCase(ctx.args[i], "samples") && i + 1 < ctx.args.size()) {
      int64_t samples = 0;
      if (!ParseInt64(ctx.args[i + 1], &samples)) return ReplyError(ctx, errors::kNotInteger);
      if (samples < 0) return ReplyError(ctx, errors::kSyntax);
      ++i;
    } else {
      return ReplyError(ctx, errors::kSyntax);
    }
  }
  core::Store::Ref ref = ctx.store.Find(ctx.args[2]);
  if (ref == nullptr) return ctx.reply.Null();
  ctx.reply.Integer(static_cast<int64_t>(ctx.store.KeyFootprint(ref)));
}

void Memory(CommandContext& ctx) {
  std::string sub = AsciiLower(ctx.args[1]);
  if (sub == "usage") {
    if (ctx.args.size() < 3) return SubcommandArity(ctx, "memory");
    return MemoryUsage(ctx);
  }
  if (sub == "stats") {
    if (ctx.args.size() != 2) return SubcommandArity(ctx, "memory");
    info_classes = &ctx.store.key_classes();
    return InfoPart(ctx);
  }
  if (sub == "help") {
    if (ctx.args.size() != 2) return SubcommandArity(ctx, "memory");
    static constexpr std::string_view kHelp[] = {
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
    };
    return ReplyHelp(ctx.reply, kHelp);
  }
  UnknownSubcommand(ctx, "memory");
}

// MEMORY STATS: Redis's map shape with the fields Keep can state exactly, then per class.
void CombineMemoryStats(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  ShardStats stats = SumStats(input);
  const size_t classes = std::min(info_classes->size(), kMaxReportedClasses);
  reply.MapHeader(9 + classes);
  auto field = [&](std::string_view name, uint64_t value) {
    reply.Bulk(name);
    reply.Integer(static_cast<int64_t>(value));
  };
  field("total.allocated", stats.used_bytes);
  field("clients.normal", stats.client_output_buffer_bytes + stats.client_query_buffer_bytes);
  field("keys.count", stats.keys);
  field("keys.bytes-per-key", stats.keys == 0 ? 0 : stats.used_bytes / stats.keys);
  field("dataset.bytes", stats.dataset_bytes);
  field("reserved.bytes", stats.reserved_bytes);
  field("rss.bytes", ResidentBytes());
  field("maxmemory", stats.maxmemory);
  field("evicted.keys", stats.evicted_keys);
  for (size_t c = 0; c < classes; ++c) {
    reply.Bulk("class." + std::string(info_classes->NameOf(static_cast<uint8_t>(c))));
    reply.MapHeader(5);
    reply.Bulk("policy");
    reply.Bulk(core::PolicyName(info_classes->PolicyOf(static_cast<uint8_t>(c))));
    field("keys", stats.class_keys[c]);
    field("bytes", stats.class_bytes[c]);
    field("evicted", stats.class_evicted[c]);
    field("expired", stats.class_expired[c]);
  }
}

// --- CONFIG ---

Routing ConfigRoute(std::span<const std::string_view> args) {
  return EqualsIgnoreCase(args[1], "resetstat") ? Routing::kAllShards : Routing::kLocal;
}

void Config(CommandContext& ctx) {
  std::string sub = AsciiLower(ctx.args[1]);
  size_t argc = ctx.args.size();
  if (sub == "resetstat") {
    if (argc != 2) return SubcommandArity(ctx, "config");
    ctx.services->ResetStats();
    return;
  }
  if (sub == "get") {
    if (argc < 3) return SubcommandArity(ctx, "config");
    std::vector<std::pair<std::string, std::string>> pairs;
    for (size_t i = 2; i < argc; ++i) ctx.services->ConfigGet(ctx.args[i], &pairs);
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    ctx.reply.MapHeader(pairs.size());
    for (const auto& [name, value] : pairs) {
      ctx.reply.Bulk(name);
      ctx.reply.Bulk(value);
    }
    return;
  }
  if (sub == "set") {
    if (argc < 4 || (argc - 2) % 2 != 0) return SubcommandArity(ctx, "config");
    for (size_t i = 2; i < argc; i += 2) {
      std::string error = ctx.services->ConfigSet(ctx.args[i], ctx.args[i + 1]);
      if (!error.empty()) return ctx.reply.Error(error);
    }
    return ctx.reply.Ok();
  }
  if (sub == "help") {
    static constexpr std::string_view kHelp[] = {
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
    };
    return ReplyHelp(ctx.reply, kHelp);
  }
  UnknownSubcommand(ctx, "config");
}

void CombineConfig(const CombineInput&, proto::ReplyWriter& reply) { reply.Ok(); }

// --- COMMAND ---

constexpr std::pair<CommandFlag, std::string_view> kFlagNames[] = {
    {kWrite, "write"},
    {kReadOnly, "readonly"},
    {kDenyOom, "denyoom"},
    {kAdmin, "admin"},
    {kPubSub, "pubsub"},
    {kNoScript, "noscript"},
    {kLoading, "loading"},
    {kStale, "stale"},
    {kFast, "fast"},
    {kNoAuth, "no_auth"},
    {kMayReplicate, "may_replicate"},
};

std::vector<std::string_view> SplitWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

void WriteCommandInfo(proto::ReplyWriter& reply, const CommandSpec& spec) {
  reply.ArrayHeader(10);
  reply.Bulk(spec.name);
  reply.Integer(spec.arity);
  int flags = 0;
  for (const auto& [flag, name] : kFlagNames) flags += (spec.flags & flag) ? 1 : 0;
  reply.SetHeader(flags);
  for (const auto& [flag, name] : kFlagNames) {
    if (spec.flags & flag) reply.Simple(name);
  }
  reply.Integer(spec.first_key);
  reply.Integer(spec.last_key);
  reply.Integer(spec.key_step);
  std::vector<std::string_view> categories = SplitWords(spec.acl_categories);
  reply.SetHeader(categories.size());
  for (std::string_view category : categories) reply.Simple(category);
  reply.SetHeader(0);    // tips
  reply.ArrayHeader(0);  // key specifications
  reply.ArrayHeader(0);  // subcommands
}

void WriteCommandDocs(proto::ReplyWriter& reply, const CommandSpec& spec) {
  reply.Bulk(spec.name);
  bool has_args = !spec.syntax.empty();
  reply.MapHeader(has_args ? 5 : 4);
  reply.Bulk("summary");
  reply.Bulk(spec.summary);
  reply.Bulk("since");
  reply.Bulk(spec.since);
  reply.Bulk("group");
  reply.Bulk(spec.group);
  reply.Bulk("complexity");
  reply.Bulk(spec.complexity);
  if (has_args) {
    reply.Bulk("arguments");
    WriteCommandArgs(reply, ParseCommandSyntax(spec.syntax));
  }
}

void Command(CommandContext& ctx) {
  const CommandTable& table = CommandTable::Default();
  size_t argc = ctx.args.size();
  if (argc == 1) {
    ctx.reply.ArrayHeader(table.all().size());
    for (const CommandSpec* spec : table.all()) WriteCommandInfo(ctx.reply, *spec);
    return;
  }
  std::string sub = AsciiLower(ctx.args[1]);
  if (sub == "count") {
    if (argc != 2) return SubcommandArity(ctx, "command");
    return ctx.reply.Integer(static_cast<int64_t>(table.all().size()));
  }
  if (sub == "info") {
    if (argc == 2) {
      ctx.reply.ArrayHeader(table.all().size());
      for (const CommandSpec* spec : table.all()) WriteCommandInfo(ctx.reply, *spec);
      return;
    }
    ctx.reply.ArrayHeader(argc - 2);
    for (size_t i = 2; i < argc; ++i) {
      const CommandSpec* spec = table.Find(ctx.args[i]);
      if (spec == nullptr)
        ctx.reply.NullArray();
      else
        WriteCommandInfo(ctx.reply, *spec);
    }
    return;
  }
  if (sub == "docs") {
    std::vector<const CommandSpec*> specs;
    if (argc == 2) {
      specs = table.all();
    } else {
      for (size_t i = 2; i < argc; ++i) {
        if (const CommandSpec* spec = table.Find(ctx.args[i])) specs.push_back(spec);
      }
    }
    ctx.reply.MapHeader(specs.size());
    for (const CommandSpec* spec : specs) WriteCommandDocs(ctx.reply, *spec);
    return;
  }
  if (sub == "list") {
    if (argc != 2) return ctx.reply.Error(errors::kSyntax);
    ctx.reply.ArrayHeader(table.all().size());
    for (const CommandSpec* spec : table.all()) ctx.reply.Bulk(spec->name);
    return;
  }
  if (sub == "help") {
    static constexpr std::string_view kHelp[] = {
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all commands.",
        "COUNT",
        "    Return the total number of commands in this server.",
        "LIST",
        "    Return a list of all commands in this server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple commands.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple commands.",
    };
    return ReplyHelp(ctx.reply, kHelp);
  }
  UnknownSubcommand(ctx, "command");
}

// --- TIME, SHUTDOWN ---

void Time(CommandContext& ctx) {
  const int64_t micros = core::WallNanos() / 1000;
  ctx.reply.ArrayHeader(2);
  ctx.reply.Bulk(std::to_string(micros / 1'000'000));
  ctx.reply.Bulk(std::to_string(micros % 1'000'000));
}

void Shutdown(CommandContext& ctx) {
  for (size_t i = 1; i < ctx.args.size(); ++i) {
    std::string option = AsciiLower(ctx.args[i]);
    if (option != "nosave" && option != "save" && option != "now" && option != "force") {
      return ctx.reply.Error(errors::kSyntax);
    }
  }
  // Like Redis, a successful SHUTDOWN answers nothing: the connection just closes.
  ctx.client->close_after_reply = true;
  ctx.services->RequestShutdown();
}

// --- DEBUG ---

Routing DebugRoute(std::span<const std::string_view> args) {
  return EqualsIgnoreCase(args[1], "populate") ? Routing::kAllShards : Routing::kLocal;
}

constexpr std::string_view kDebugDisabled =
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you "
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.";

// DEBUG POPULATE count [prefix] [size], as Redis: keys prefix:N with values "value:N" (or N
// zero-padded bytes when size is given), skipping keys that exist. Each shard creates the keys
// it owns.
void DebugPopulate(CommandContext& ctx) {
  size_t argc = ctx.args.size();
  if (argc < 3 || argc > 5) {
    return ReplyError(ctx,
                      "ERR Unknown subcommand or wrong number of arguments for 'populate'. "
                      "Try DEBUG HELP.");
  }
  int64_t count = 0;
  if (!ParseInt64(ctx.args[2], &count) || count < 0) {
    return ReplyError(ctx, errors::kNotInteger);
  }
  std::string_view prefix = argc >= 4 ? ctx.args[3] : "key";
  int64_t size = 0;
  if (argc == 5 && (!ParseInt64(ctx.args[4], &size) || size < 0)) {
    return ReplyError(ctx, errors::kNotInteger);
  }
  std::string key(prefix);
  key.push_back(':');
  size_t prefix_length = key.size();
  std::string value;
  char digits[24];
  for (int64_t i = 0; i < count; ++i) {
    size_t length = FormatInt64(i, digits);
    key.resize(prefix_length);
    key.append(digits, length);
    if (!ctx.services->OwnsKey(key)) continue;
    if (ctx.store.Find(key) != nullptr) continue;
    value.assign("value:");
    value.append(digits, length);
    if (size > 0) value.resize(static_cast<size_t>(size), '\0');
    ctx.store.Insert(key, value);
  }
}

void Debug(CommandContext& ctx) {
  if (!ctx.limits.enable_debug_command) {
    return ReplyError(ctx, kDebugDisabled);
  }
  std::string sub = AsciiLower(ctx.args[1]);
  if (sub == "populate") return DebugPopulate(ctx);
  if (sub == "sleep") {
    if (ctx.args.size() != 3) return SubcommandArity(ctx, "debug");
    long double seconds = 0;
    if (!ParseLongDouble(ctx.args[2], &seconds) || seconds < 0) {
      return ctx.reply.Error(errors::kNotFloat);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)));
    return ctx.reply.Ok();
  }
  if (sub == "help") {
    static constexpr std::string_view kHelp[] = {
        "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "POPULATE <count> [<prefix>] [<size>]",
        "    Create <count> string keys named key:<num>. If <prefix> is specified then",
        "    it is used instead of the 'key' prefix. These are not propagated to",
        "    replicas. Cluster slots are not respected so keys not belonging to the",
        "    current node can be created in cluster mode.",
        "SLEEP <seconds>",
        "    Stop the server for <seconds>. Decimals allowed.",
    };
    return ReplyHelp(ctx.reply, kHelp);
  }
  UnknownSubcommand(ctx, "debug");
}

void CombineDebug(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  reply.Ok();
}

constexpr CommandSpec kServerCommands[] = {
    {.name = "memory",
     .arity = -2,
     .flags = 0,
     .first_key = 2,  // MEMORY USAGE's key; the other subcommands take none
     .last_key = 2,
     .key_step = 1,
     .routing = Routing::kLocal,
     .handler = Memory,
     .combine = CombineMemoryStats,
     .group = "server",
     .summary = "A container for memory diagnostics commands",
     .since = "4.0.0",
     .complexity = "Depends on subcommand.",
     .acl_categories = "@slow",
     .route_of = MemoryRoute},
    {.name = "info",
     .arity = -1,
     .flags = kLoading | kStale,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kAllShards,
     .handler = Info,
     .combine = CombineInfo,
     .group = "server",
     .summary = "Get information and statistics about the server",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@slow @dangerous",
     .syntax = "[section [section ...]]"},
    {.name = "config",
     .arity = -2,
     .flags = kAdmin | kNoScript | kLoading | kStale,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Config,
     .combine = CombineConfig,
     .group = "server",
     .summary = "A container for server configuration commands",
     .since = "2.0.0",
     .complexity = "Depends on subcommand.",
     .acl_categories = "@slow",
     .route_of = ConfigRoute},
    {.name = "command",
     .arity = -1,
     .flags = kLoading | kStale,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Command,
     .group = "server",
     .summary = "Get array of Redis command details",
     .since = "2.8.13",
     .complexity = "O(N) where N is the total number of Redis commands",
     .acl_categories = "@slow @connection"},
    {.name = "time",
     .arity = 1,
     .flags = kLoading | kStale | kFast,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Time,
     .group = "server",
     .summary = "Return the current server time",
     .since = "2.6.0",
     .complexity = "O(1)",
     .acl_categories = "@fast"},
    {.name = "shutdown",
     .arity = -1,
     .flags = kAdmin | kNoScript | kLoading | kStale,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Shutdown,
     .group = "server",
     .summary = "Synchronously save the dataset to disk and then shut down the server",
     .since = "1.0.0",
     .complexity = "O(N) when saving, where N is the total number of keys in "
                   "all databases when saving data, otherwise O(1)",
     .acl_categories = "@admin @slow @dangerous",
     .syntax = "[NOSAVE | SAVE] [NOW] [FORCE]"},
    {.name = "debug",
     .arity = -2,
     .flags = kAdmin | kNoScript | kLoading | kStale,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Debug,
     .combine = CombineDebug,
     .group = "server",
     .summary = "A container for debugging commands",
     .since = "1.0.0",
     .complexity = "Depends on subcommand.",
     .acl_categories = "@admin @slow @dangerous",
     .route_of = DebugRoute},
};

}  // namespace

std::span<const CommandSpec> ServerCommands() { return kServerCommands; }

}  // namespace keep::commands
