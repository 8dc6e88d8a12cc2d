// What a command handler sees, and how a command is described in the command table.
//
// Every command runs as one or more *parts*, each on the shard that owns the keys it touches
// (design §2.4). A single-key command is one part whose reply bytes go straight to the client.
// A command over keys of several shards (MGET, DEL, ...) or over every shard (DBSIZE, KEYS, ...)
// runs one part per shard, each filling a PartResult, and its Combiner writes the client's reply
// on the originating shard once every part is back. Handlers never know whether they run on the
// connection's own shard or on another one.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/core/slot_state.h"
#include "dataplane/core/store.h"
#include "dataplane/proto/reply_writer.h"

namespace keep::cluster {
struct View;
}

namespace keep::commands {

// The three pub/sub namespaces: channels, patterns over channels, and shard channels.
enum class PubSubKind : uint8_t { kChannel = 0, kPattern = 1, kShardChannel = 2 };

// Per-connection state that local commands (HELLO, CLIENT, AUTH, ...) read and change.
struct ClientState {
  uint64_t id = 0;
  std::string name;
  int resp_version = 2;
  bool authenticated = true;
  bool close_after_reply = false;  // QUIT
  bool no_evict = false;
  int db = 0;
  int64_t created_ms = 0;
  int64_t last_interaction_ms = 0;
  std::string_view last_command;  // the name of the last known command run (CLIENT LIST cmd=)
  std::string addr;               // peer "ip:port"
  std::string laddr;              // local "ip:port"
  int fd = -1;
  int shard = 0;
  // Pub/sub subscriptions by PubSubKind.
  std::array<std::set<std::string, std::less<>>, 3> subscriptions;

  // Redis counts channels and patterns together; shard channels apart.
  size_t SubscriptionCount() const { return subscriptions[0].size() + subscriptions[1].size(); }
  bool Subscribed() const { return SubscriptionCount() + subscriptions[2].size() > 0; }
};

// Results of one part of a split or broadcast command, combined on the originating shard.
struct PartResult {
  // Reply fragments. For per-key commands (kEachKey) `offsets` holds, for each key of the part in
  // the order given, where its fragment starts in `resp`, followed by one final end offset.
  std::string resp;
  std::vector<uint32_t> offsets;
  int64_t integer = 0;  // counts to sum (DEL, EXISTS, DBSIZE, KEYS elements, ...)
  uint64_t cursor = 0;  // SCAN: the next cursor within this shard
  bool failed = false;  // `resp` holds one error reply that the combiner must return as is

  void Reset() {
    resp.clear();
    offsets.clear();
    integer = 0;
    cursor = 0;
    failed = false;
  }
};

// Server settings that commands need (set from the configuration at startup).
struct Limits {
  int64_t proto_max_bulk_len = 512ll * 1024 * 1024;
  bool enable_debug_command = false;
  std::string requirepass;          // empty: no AUTH needed
  int64_t max_lock_ttl_ms = 60000;  // --max-lock-ttl: the longest TTL LOCK/LOCKEXTEND accept
  // EVAL/EVALSHA: a script running longer is aborted (0: no limit).
  int64_t lua_time_limit_ms = 5000;
};

class ShardServices;  // shard-level services for server commands (see shard_services.h)

struct CommandContext {
  core::Store& store;
  int64_t now_ms;  // the shard clock, Unix milliseconds (see core/clock.h)
  // The wall clock's drift from the shard clock (core::Clock::wall_drift_ms), for commands
  // that take or give Unix times: see ShardFromUnix and UnixFromShard.
  int64_t wall_drift_ms = 0;
  // args[0] is the command name as sent; for parts of kEachKey commands, args holds the name and
  // only this part's keys (with their values for MSET-like commands), in the original order.
  std::span<const std::string_view> args;
  proto::ReplyWriter& reply;  // writes into PartResult::resp for parts of split commands
  const Limits& limits;
  PartResult* part = nullptr;         // set for kEachKey and kAllShards parts
  ClientState* client = nullptr;      // set only for kLocal commands
  ShardServices* services = nullptr;  // always set by the shard; may be a fake in unit tests
  int shard_index = 0;
  int shard_count = 1;
  uint64_t caller_id = 0;  // the id of the client that sent the request (CLIENT KILL SKIPME)
  // kSingleKey: the slot of the request's keys (UINT32_MAX, commands::kNoSlot, when nothing
  // needed it to route: one shard outside a cluster; slot_of gives it), and the owning shard's
  // per-slot state.
  uint32_t slot = 0;
  core::SlotTable* slots = nullptr;
  // Cluster mode: this shard's view for the turn (nullptr on a single node), and the slot
  // function, for the CLUSTER commands.
  const cluster::View* view = nullptr;
  const core::SlotFunction* slot_of = nullptr;

  // A Unix time in ms on the shard clock, and back; saturating at the ends of int64.
  int64_t ShardFromUnix(int64_t unix_ms) const {
    int64_t shard_ms;
    if (!__builtin_sub_overflow(unix_ms, wall_drift_ms, &shard_ms)) return shard_ms;
    return wall_drift_ms < 0 ? INT64_MAX : INT64_MIN;
  }
  int64_t UnixFromShard(int64_t shard_ms) const {
    int64_t unix_ms;
    if (!__builtin_add_overflow(shard_ms, wall_drift_ms, &unix_ms)) return unix_ms;
    return wall_drift_ms > 0 ? INT64_MAX : INT64_MIN;
  }
};

enum class Routing : uint8_t {
  kLocal,        // no keys: runs on the connection's shard with its ClientState
  kSingleKey,    // runs on the shard owning args[first_key]; every key must share its slot
  kEachKey,      // keys split by owning shard, one part per shard, joined by the combiner
  kAllShards,    // one part per shard (args unchanged), joined by the combiner
  kCursorShard,  // SCAN: runs on the shard encoded in the cursor (args[1])
};

// Command flags, the subset of Redis's that clients and COMMAND INFO care about.
enum CommandFlag : uint32_t {
  kWrite = 1 << 0,
  kReadOnly = 1 << 1,
  kDenyOom = 1 << 2,
  kAdmin = 1 << 3,
  kPubSub = 1 << 4,
  kNoScript = 1 << 5,
  kLoading = 1 << 6,
  kStale = 1 << 7,
  kFast = 1 << 8,
  kNoAuth = 1 << 9,
  kMayReplicate = 1 << 10,
};

// Input of a combiner: the parts in shard order and, for kEachKey commands, where each original
// key went (key i is position key_pos[i] of part key_part[i]).
struct CombineInput {
  std::span<PartResult* const> parts;
  std::span<const uint16_t> key_part;
  std::span<const uint32_t> key_pos;
  std::span<const std::string_view> args;  // the original request
  // kCursorShard: `parts` holds the one part, run on `shard` of `shard_count` (SCAN builds the
  // next cursor from them).
  int shard = 0;
  int shard_count = 1;
};

using Handler = void (*)(CommandContext& ctx);
using Combiner = void (*)(const CombineInput& input, proto::ReplyWriter& reply);

struct CommandSpec {
  std::string_view name;  // lower case
  int arity;              // Redis convention: N exact, -N at least N (name included)
  uint32_t flags;
  int first_key;  // 0 when none
  int last_key;   // -1 for the last argument
  int key_step;
  Routing routing;
  Handler handler;
  Combiner combine = nullptr;          // kEachKey and kAllShards only
  std::string_view group = "generic";  // COMMAND DOCS group: string, generic, server, connection
  std::string_view summary = "";
  std::string_view since = "1.0.0";
  std::string_view complexity = "O(1)";
  std::string_view acl_categories = "";  // space separated, e.g. "@write @string @fast"
  // Per-subcommand routing (CLIENT LIST runs on every shard, CLIENT ID locally); when set it
  // overrides `routing` and is called after the arity check.
  Routing (*route_of)(std::span<const std::string_view> args) = nullptr;
  // Commands whose keys are counted by an argument (EVAL's numkeys): the number of keys from
  // first_key on, used instead of last_key by kSingleKey routing. Called after route_of, only
  // when it chose kSingleKey, so it may assume the count is valid.
  int (*key_count)(std::span<const std::string_view> args) = nullptr;
  // The arguments as Redis documents them ("key value [NX | XX] ..."), for COMMAND DOCS; see
  // command_syntax.h. Empty for containers and commands without arguments.
  std::string_view syntax = "";
  // Dense index assigned by the CommandTable that holds this spec (per-command metrics).
  uint16_t id = 0;
};

// Redis's exact error texts, shared by every family.
namespace errors {
inline constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view kNotInteger = "ERR value is not an integer or out of range";
inline constexpr std::string_view kNotFloat = "ERR value is not a valid float";
inline constexpr std::string_view kSyntax = "ERR syntax error";
inline constexpr std::string_view kOverflow = "ERR increment or decrement would overflow";
inline constexpr std::string_view kNoSuchKey = "ERR no such key";
inline constexpr std::string_view kCrossSlot =
    "CROSSSLOT Keys in request don't hash to the same slot";
inline constexpr std::string_view kInvalidExpire = "ERR invalid expire time in '%s' command";
}  // namespace errors

// "ERR wrong number of arguments for 'get' command"
std::string WrongArity(std::string_view command_name);

}  // namespace keep::commands
