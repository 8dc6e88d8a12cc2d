// Keyspace commands (design §2.6): deletion and existence across shards, TTLs, renames within a
// slot, KEYS/SCAN/RANDOMKEY/DBSIZE over every shard, FLUSHALL/FLUSHDB, and Keep's DELPREFIX.
// Replies and errors are Redis 7.0.15's (src/db.c, src/expire.c) byte for byte.
#include <charconv>
#include <string>
#include <vector>

#include "dataplane/commands/command_table.h"
#include "dataplane/commands/family_util.h"
#include "dataplane/commands/glob_util.h"
#include "dataplane/commands/plan.h"
#include "dataplane/commands/string_util.h"

namespace keep::commands {
namespace {

using core::Store;

// A count that split commands sum: into the part for the combiner, or straight to the client
// when the whole command ran in one place.
void ReplyCount(CommandContext& ctx, int64_t count) {
  if (ctx.part != nullptr) {
    ctx.part->integer = count;
  } else {
    ctx.reply.Integer(count);
  }
}

// DEL key [key ...] / UNLINK key [key ...] -> how many existed (and were deleted).
void Del(CommandContext& ctx) {
  int64_t deleted = 0;
  for (std::string_view key : ctx.args.subspan(1)) {
    // Find first: an expired key is reclaimed but, as in Redis, not counted.
    Store::Ref ref = ctx.store.Find(key);
    if (ref != nullptr) {
      ctx.store.Erase(ref);
      ++deleted;
    }
  }
  ReplyCount(ctx, deleted);
}

// EXISTS key [key ...] / TOUCH key [key ...] -> how many exist (a repeated key counts again).
void Exists(CommandContext& ctx) {
  int64_t found = 0;
  for (std::string_view key : ctx.args.subspan(1)) {
    if (ctx.store.Find(key) != nullptr) ++found;
  }
  ReplyCount(ctx, found);
}

// TYPE key -> +string, +lock or +none.
void Type(CommandContext& ctx) {
  Store::Ref ref = ctx.store.Find(ctx.args[1]);
  if (ref == nullptr) return ctx.reply.Simple("none");
  ctx.reply.Simple(ctx.store.Type(ref) == core::ValueType::kLock ? "lock" : "string");
}

enum : uint32_t { kExpireNx = 1, kExpireXx = 2, kExpireGt = 4, kExpireLt = 8 };

// Redis's expireGenericCommand: its basetime is now for EXPIRE/PEXPIRE (`relative`) and 0 for
// the *AT forms, whose Unix time then goes on the shard clock.
void ExpireGeneric(CommandContext& ctx, bool relative, bool seconds, std::string_view command) {
  uint32_t flags = 0;
  for (size_t j = 3; j < ctx.args.size(); ++j) {
    std::string_view opt = ctx.args[j];
    if (EqualsIgnoreCase(opt, "nx")) {
      flags |= kExpireNx;
    } else if (EqualsIgnoreCase(opt, "xx")) {
      flags |= kExpireXx;
    } else if (EqualsIgnoreCase(opt, "gt")) {
      flags |= kExpireGt;
    } else if (EqualsIgnoreCase(opt, "lt")) {
      flags |= kExpireLt;
    } else {
      ReplyError(ctx, "ERR Unsupported option " + std::string(opt));
      return;
    }
  }
  if ((flags & kExpireNx) && (flags & (kExpireXx | kExpireGt | kExpireLt))) {
    ReplyError(ctx, "ERR NX and XX, GT or LT options at the same time are not compatible");
    return;
  }
  if ((flags & kExpireGt) && (flags & kExpireLt)) {
    ReplyError(ctx, "ERR GT and LT options at the same time are not compatible");
    return;
  }

  int64_t when;
  if (!ParseInt64(ctx.args[2], &when)) {
    ReplyError(ctx, errors::kNotInteger);
    return;
  }
  // Negative times are allowed (they delete the key), overflowing ones are not.
  if (seconds) {
    if (when > INT64_MAX / 1000 || when < INT64_MIN / 1000) {
      ReplyError(ctx, InvalidExpireError(command));
      return;
    }
    when *= 1000;
  }
  if (relative) {
    if (when > INT64_MAX - ctx.now_ms) {
      ReplyError(ctx, InvalidExpireError(command));
      return;
    }
    when += ctx.now_ms;
  } else {
    when = ctx.ShardFromUnix(when);
  }

  Store::Ref ref = ctx.store.Find(ctx.args[1]);
  if (ref == nullptr) {
    ctx.reply.Integer(0);
    return;
  }
  if (flags != 0) {
    int64_t current = ctx.store.ExpireAt(ref);
    bool persistent = current == core::kNoExpiry;
    // No TTL counts as an infinite one: GT never beats it, LT always does.
    if (((flags & kExpireNx) && !persistent) || ((flags & kExpireXx) && persistent) ||
        ((flags & kExpireGt) && (persistent || when <= current)) ||
        ((flags & kExpireLt) && !persistent && when >= current)) {
      ctx.reply.Integer(0);
      return;
    }
  }
  if (when <= ctx.now_ms) {
    ctx.store.Erase(ref);
  } else {
    ctx.store.SetExpireAt(ref, when);
  }
  ctx.reply.Integer(1);
}

// EXPIRE key seconds [NX | XX | GT | LT] -> 1 if the TTL was set (or the key deleted), else 0.
void Expire(CommandContext& ctx) { ExpireGeneric(ctx, true, true, "expire"); }
// PEXPIRE key milliseconds [NX | XX | GT | LT]
void PExpire(CommandContext& ctx) { ExpireGeneric(ctx, true, false, "pexpire"); }
// EXPIREAT key unix-seconds [NX | XX | GT | LT]
void ExpireAt(CommandContext& ctx) { ExpireGeneric(ctx, false, true, "expireat"); }
// PEXPIREAT key unix-milliseconds [NX | XX | GT | LT]
void PExpireAt(CommandContext& ctx) { ExpireGeneric(ctx, false, false, "pexpireat"); }

// Redis's ttlGenericCommand: -2 when missing, -1 without a TTL, else the remaining time (or
// the deadline with `absolute`), in ms or rounded to seconds.
void TtlGeneric(CommandContext& ctx, bool milliseconds, bool absolute) {
  Store::Ref ref = ctx.store.Find(ctx.args[1]);
  if (ref == nullptr) {
    ctx.reply.Integer(-2);
    return;
  }
  int64_t deadline = ctx.store.ExpireAt(ref);
  if (deadline == core::kNoExpiry) {
    ctx.reply.Integer(-1);
    return;
  }
  int64_t ttl = absolute ? ctx.UnixFromShard(deadline) : deadline - ctx.now_ms;
  if (ttl < 0) ttl = 0;
  // Redis's (ttl + 500) / 1000, without its overflow for deadlines near INT64_MAX.
  ctx.reply.Integer(milliseconds ? ttl : ttl / 1000 + (ttl % 1000 + 500) / 1000);
}

void Ttl(CommandContext& ctx) { TtlGeneric(ctx, false, false); }
void PTtl(CommandContext& ctx) { TtlGeneric(ctx, true, false); }
void ExpireTime(CommandContext& ctx) { TtlGeneric(ctx, false, true); }
void PExpireTime(CommandContext& ctx) { TtlGeneric(ctx, true, true); }

// PERSIST key -> 1 if a TTL was removed, else 0.
void Persist(CommandContext& ctx) {
  Store::Ref ref = ctx.store.Find(ctx.args[1]);
  if (ref == nullptr || ctx.store.ExpireAt(ref) == core::kNoExpiry) {
    ctx.reply.Integer(0);
    return;
  }
  ctx.store.SetExpireAt(ref, core::kNoExpiry);
  ctx.reply.Integer(1);
}

// Writes `value` with `deadline` at `key`, replacing whatever is there (RENAME, COPY).
void Replace(Store& store, std::string_view key, std::string_view value, int64_t deadline) {
  Store::Ref existing = store.Find(key);
  if (existing != nullptr) store.Erase(existing);
  Store::Ref ref = store.Insert(key, value);
  if (deadline != core::kNoExpiry) store.SetExpireAt(ref, deadline);
}

// Redis's renameGenericCommand. Both keys share a slot (checked by the plan), so one shard
// holds both.
void RenameGeneric(CommandContext& ctx, bool nx) {
  std::string_view from = ctx.args[1];
  std::string_view to = ctx.args[2];
  Store::Ref ref = ctx.store.Find(from);
  if (ref == nullptr) {
    ReplyError(ctx, errors::kNoSuchKey);
    return;
  }
  if (from == to) {
    if (nx) {
      ctx.reply.Integer(0);
    } else {
      ctx.reply.Ok();
    }
    return;
  }
  // Copies: the next Find or Erase may invalidate `ref` and the bytes it points to.
  std::string value(ctx.store.Value(ref));
  int64_t deadline = ctx.store.ExpireAt(ref);
  if (nx && ctx.store.Find(to) != nullptr) {
    ctx.reply.Integer(0);
    return;
  }
  ctx.store.Erase(from);
  Replace(ctx.store, to, value, deadline);
  if (nx) {
    ctx.reply.Integer(1);
  } else {
    ctx.reply.Ok();
  }
}

// RENAME key newkey -> OK.
void Rename(CommandContext& ctx) { RenameGeneric(ctx, false); }
// RENAMENX key newkey -> 1 if renamed, 0 if newkey existed.
void RenameNx(CommandContext& ctx) { RenameGeneric(ctx, true); }

// COPY source destination [DB destination-db] [REPLACE] -> 1 if copied, else 0. Keep has only
// database 0.
void Copy(CommandContext& ctx) {
  bool replace = false;
  for (size_t j = 3; j < ctx.args.size(); ++j) {
    bool has_next = j + 1 < ctx.args.size();
    if (EqualsIgnoreCase(ctx.args[j], "replace")) {
      replace = true;
    } else if (EqualsIgnoreCase(ctx.args[j], "db") && has_next) {
      int32_t db;
      if (!ParseInt32(ctx.args[j + 1], &db)) {
        ReplyError(ctx, errors::kNotInteger);
        return;
      }
      if (db != 0) {
        ReplyError(ctx, "ERR DB index is out of range");
        return;
      }
      ++j;
    } else {
      ReplyError(ctx, errors::kSyntax);
      return;
    }
  }
  std::string_view from = ctx.args[1];
  std::string_view to = ctx.args[2];
  if (from == to) {
    ReplyError(ctx, "ERR source and destination objects are the same");
    return;
  }
  Store::Ref ref = ctx.store.Find(from);
  if (ref == nullptr) {
    ctx.reply.Integer(0);
    return;
  }
  std::string value(ctx.store.Value(ref));
  int64_t deadline = ctx.store.ExpireAt(ref);
  if (!replace && ctx.store.Find(to) != nullptr) {
    ctx.reply.Integer(0);
    return;
  }
  Replace(ctx.store, to, value, deadline);
  ctx.reply.Integer(1);
}

// Visits every live key of the shard.
template <typename Visit>
void ForEachKey(Store& store, Visit&& visit) {
  uint64_t cursor = 0;
  do {
    cursor = store.Scan(cursor, 1024, [&](std::string_view key, Store::Ref) { visit(key); });
  } while (cursor != 0);
}

// KEYS pattern -> every matching key. Each shard's part writes its keys as bulk fragments and
// counts them; CombineKeys joins them under one array header.
void Keys(CommandContext& ctx) {
  std::string_view pattern = ctx.args[1];
  bool all = pattern == "*";
  std::string local;
  proto::ReplyWriter local_writer(&local, ctx.reply.resp_version());
  proto::ReplyWriter& out = ctx.part != nullptr ? ctx.reply : local_writer;
  int64_t count = 0;
  ForEachKey(ctx.store, [&](std::string_view key) {
    if (all || StringMatch(pattern, key)) {
      out.Bulk(key);
      ++count;
    }
  });
  if (ctx.part != nullptr) {
    ctx.part->integer = count;
    return;
  }
  ctx.reply.ArrayHeader(static_cast<size_t>(count));
  ctx.reply.Raw(local);
}

void CombineKeys(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  int64_t count = 0;
  for (const PartResult* part : input.parts) count += part->integer;
  reply.ArrayHeader(static_cast<size_t>(count));
  for (const PartResult* part : input.parts) reply.Raw(part->resp);
}

void WriteScanReply(proto::ReplyWriter& reply, uint64_t cursor, int64_t count,
                    std::string_view keys) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), cursor);
  (void)ec;  // 24 bytes hold any uint64_t
  reply.ArrayHeader(2);
  reply.Bulk(std::string_view(digits, static_cast<size_t>(end - digits)));
  reply.ArrayHeader(static_cast<size_t>(count));
  reply.Raw(keys);
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type] (design §2.6: the cursor encodes the
// shard and the position within it, see EncodeScanCursor). The part runs on the cursor's shard
// from the position in part->cursor, writes the keys it found as bulk fragments, counts them
// and leaves the shard's next position in part->cursor; CombineScan builds the client's cursor.
void Scan(CommandContext& ctx) {
  std::string_view pattern;
  bool use_pattern = false;
  std::string_view type;
  bool use_type = false;
  int64_t count = 10;
  for (size_t i = 2; i < ctx.args.size();) {
    std::string_view opt = ctx.args[i];
    bool has_value = ctx.args.size() - i >= 2;
    if (EqualsIgnoreCase(opt, "count") && has_value) {
      if (!ParseInt64(ctx.args[i + 1], &count)) {
        ReplyError(ctx, errors::kNotInteger);
        return;
      }
      if (count < 1) {
        ReplyError(ctx, errors::kSyntax);
        return;
      }
    } else if (EqualsIgnoreCase(opt, "match") && has_value) {
      pattern = ctx.args[i + 1];
      use_pattern = pattern != "*";
    } else if (EqualsIgnoreCase(opt, "type") && has_value) {
      type = ctx.args[i + 1];
      use_type = true;
    } else {
      ReplyError(ctx, errors::kSyntax);
      return;
    }
    i += 2;
  }

  uint64_t position = 0;
  if (ctx.part != nullptr) {
    position = ctx.part->cursor;
  } else {
    // Run whole on one shard: the position comes from the cursor itself.
    std::string_view text = ctx.args[1];
    uint64_t cursor = 0;
    std::from_chars(text.data(), text.data() + text.size(), cursor);
    position = cursor / static_cast<uint64_t>(ctx.shard_count);
  }

  std::string local;
  proto::ReplyWriter local_writer(&local, ctx.reply.resp_version());
  proto::ReplyWriter& out = ctx.part != nullptr ? ctx.reply : local_writer;
  int64_t found = 0;
  uint64_t next = ctx.store.Scan(position, static_cast<size_t>(count),
                                 [&](std::string_view key, Store::Ref ref) {
                                   if (use_type) {
                                     bool lock = ctx.store.Type(ref) == core::ValueType::kLock;
                                     if (!EqualsIgnoreCase(type, lock ? "lock" : "string")) return;
                                   }
                                   if (use_pattern && !StringMatch(pattern, key)) return;
                                   out.Bulk(key);
                                   ++found;
                                 });
  if (ctx.part != nullptr) {
    ctx.part->cursor = next;
    ctx.part->integer = found;
    return;
  }
  WriteScanReply(ctx.reply, NextScanCursor(next, ctx.shard_index, ctx.shard_count), found, local);
}

void CombineScan(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  const PartResult& part = *input.parts[0];
  WriteScanReply(reply, NextScanCursor(part.cursor, input.shard, input.shard_count), part.integer,
                 part.resp);
}

// RANDOMKEY -> a random key or nil. Each part offers one of its shard's keys (counted in
// part->integer); CombineRandomKey picks one of the offers.
void RandomKey(CommandContext& ctx) {
  Store::Ref ref = ctx.store.RandomKey(RandomU64());
  if (ref == nullptr) {
    if (ctx.part == nullptr) ctx.reply.Null();
    return;
  }
  ctx.reply.Bulk(ctx.store.Key(ref));
  if (ctx.part != nullptr) ctx.part->integer = 1;
}

void CombineRandomKey(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  uint64_t offers = 0;
  for (const PartResult* part : input.parts) offers += part->integer > 0;
  if (offers == 0) {
    reply.Null();
    return;
  }
  // Shards are about equally loaded (slots spread keys evenly), so a uniform pick among the
  // offers is close to uniform over keys.
  uint64_t pick = RandomU64() % offers;
  for (const PartResult* part : input.parts) {
    if (part->integer > 0 && pick-- == 0) {
      reply.Raw(part->resp);
      return;
    }
  }
}

// DBSIZE -> the number of keys, expired ones not yet reclaimed included (as Redis).
void DbSize(CommandContext& ctx) { ReplyCount(ctx, static_cast<int64_t>(ctx.store.Size())); }

// DELPREFIX prefix -> how many keys starting with `prefix` were deleted (Keep).
void DelPrefix(CommandContext& ctx) {
  std::string_view prefix = ctx.args[1];
  // Collected first: the walk must not see the table change under it.
  std::vector<std::string> doomed;
  ForEachKey(ctx.store, [&](std::string_view key) {
    if (key.starts_with(prefix)) doomed.emplace_back(key);
  });
  for (const std::string& key : doomed) ctx.store.Erase(key);
  ReplyCount(ctx, static_cast<int64_t>(doomed.size()));
}

// FLUSHALL [ASYNC | SYNC] / FLUSHDB [ASYNC | SYNC] -> OK. Both modes free synchronously: the
// shard's store has no background reclaimer.
void Flush(CommandContext& ctx) {
  if (ctx.args.size() > 2 || (ctx.args.size() == 2 && !EqualsIgnoreCase(ctx.args[1], "sync") &&
                              !EqualsIgnoreCase(ctx.args[1], "async"))) {
    ReplyError(ctx, errors::kSyntax);
    return;
  }
  ctx.store.Clear();
  if (ctx.part == nullptr) ctx.reply.Ok();
}

constexpr std::string_view kDelComplexity =
    "O(N) where N is the number of keys that will be removed. When a key to remove holds a value "
    "other than a string, the individual complexity for this key is O(M) where M is the number "
    "of elements in the list, set, sorted set or hash. Removing a single key that holds a string "
    "value is O(1).";

// Metadata from Redis 7.0's src/commands/*.json; DELPREFIX is Keep's own.
constexpr CommandSpec kKeyCommands[] = {
    {.name = "del",
     .arity = -2,
     .flags = kWrite,
     .first_key = 1,
     .last_key = -1,
     .key_step = 1,
     .routing = Routing::kEachKey,
     .handler = Del,
     .combine = CombineSum,
     .group = "generic",
     .summary = "Delete a key",
     .since = "1.0.0",
     .complexity = kDelComplexity,
     .acl_categories = "@keyspace @write @slow",
     .syntax = "key [key ...]"},
    {.name = "unlink",
     .arity = -2,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = -1,
     .key_step = 1,
     .routing = Routing::kEachKey,
     .handler = Del,
     .combine = CombineSum,
     .group = "generic",
     .summary = "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but "
                "non blocking.",
     .since = "4.0.0",
     .complexity =
         "O(1) for each key removed regardless of its size. Then the command does O(N) work in a "
         "different thread in order to reclaim memory, where N is the number of allocations the "
         "deleted objects where composed of.",
     .acl_categories = "@keyspace @write @fast",
     .syntax = "key [key ...]"},
    {.name = "exists",
     .arity = -2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = -1,
     .key_step = 1,
     .routing = Routing::kEachKey,
     .handler = Exists,
     .combine = CombineSum,
     .group = "generic",
     .summary = "Determine if a key exists",
     .since = "1.0.0",
     .complexity = "O(N) where N is the number of keys to check.",
     .acl_categories = "@keyspace @read @fast",
     .syntax = "key [key ...]"},
    {.name = "touch",
     .arity = -2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = -1,
     .key_step = 1,
     .routing = Routing::kEachKey,
     .handler = Exists,
     .combine = CombineSum,
     .group = "generic",
     .summary = "Alters the last access time of a key(s). Returns the number of existing keys "
                "specified.",
     .since = "3.2.1",
     .complexity = "O(N) where N is the number of keys that will be touched.",
     .acl_categories = "@keyspace @read @fast",
     .syntax = "key [key ...]"},
    {.name = "type",
     .arity = 2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Type,
     .group = "generic",
     .summary = "Determine the type stored at key",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @read @fast",
     .syntax = "key"},
    {.name = "expire",
     .arity = -3,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Expire,
     .group = "generic",
     .summary = "Set a key's time to live in seconds",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @write @fast",
     .syntax = "key seconds [NX | XX | GT | LT]"},
    {.name = "pexpire",
     .arity = -3,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = PExpire,
     .group = "generic",
     .summary = "Set a key's time to live in milliseconds",
     .since = "2.6.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @write @fast",
     .syntax = "key milliseconds [NX | XX | GT | LT]"},
    {.name = "expireat",
     .arity = -3,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = ExpireAt,
     .group = "generic",
     .summary = "Set the expiration for a key as a UNIX timestamp",
     .since = "1.2.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @write @fast",
     .syntax = "key unix-time-seconds [NX | XX | GT | LT]"},
    {.name = "pexpireat",
     .arity = -3,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = PExpireAt,
     .group = "generic",
     .summary = "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
     .since = "2.6.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @write @fast",
     .syntax = "key unix-time-milliseconds [NX | XX | GT | LT]"},
    {.name = "ttl",
     .arity = 2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Ttl,
     .group = "generic",
     .summary = "Get the time to live for a key in seconds",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @read @fast",
     .syntax = "key"},
    {.name = "pttl",
     .arity = 2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = PTtl,
     .group = "generic",
     .summary = "Get the time to live for a key in milliseconds",
     .since = "2.6.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @read @fast",
     .syntax = "key"},
    {.name = "expiretime",
     .arity = 2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = ExpireTime,
     .group = "generic",
     .summary = "Get the expiration Unix timestamp for a key",
     .since = "7.0.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @read @fast",
     .syntax = "key"},
    {.name = "pexpiretime",
     .arity = 2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = PExpireTime,
     .group = "generic",
     .summary = "Get the expiration Unix timestamp for a key in milliseconds",
     .since = "7.0.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @read @fast",
     .syntax = "key"},
    {.name = "persist",
     .arity = 2,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Persist,
     .group = "generic",
     .summary = "Remove the expiration from a key",
     .since = "2.2.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @write @fast",
     .syntax = "key"},
    {.name = "rename",
     .arity = 3,
     .flags = kWrite,
     .first_key = 1,
     .last_key = 2,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Rename,
     .group = "generic",
     .summary = "Rename a key",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @write @slow",
     .syntax = "key newkey"},
    {.name = "renamenx",
     .arity = 3,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = 2,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = RenameNx,
     .group = "generic",
     .summary = "Rename a key, only if the new key does not exist",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @write @fast",
     .syntax = "key newkey"},
    {.name = "copy",
     .arity = -3,
     .flags = kWrite | kDenyOom,
     .first_key = 1,
     .last_key = 2,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Copy,
     .group = "generic",
     .summary = "Copy a key",
     .since = "6.2.0",
     .complexity =
         "O(N) worst case for collections, where N is the number of nested items. O(1) for "
         "string values.",
     .acl_categories = "@keyspace @write @slow",
     .syntax = "source destination [DB destination-db] [REPLACE]"},
    {.name = "keys",
     .arity = 2,
     .flags = kReadOnly,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kAllShards,
     .handler = Keys,
     .combine = CombineKeys,
     .group = "generic",
     .summary = "Find all keys matching the given pattern",
     .since = "1.0.0",
     .complexity =
         "O(N) with N being the number of keys in the database, under the assumption that the "
         "key names in the database and the given pattern have limited length.",
     .acl_categories = "@keyspace @read @slow @dangerous",
     .syntax = "pattern"},
    {.name = "scan",
     .arity = -2,
     .flags = kReadOnly,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kCursorShard,
     .handler = Scan,
     .combine = CombineScan,
     .group = "generic",
     .summary = "Incrementally iterate the keys space",
     .since = "2.8.0",
     .complexity =
         "O(1) for every call. O(N) for a complete iteration, including enough command calls "
         "for the cursor to return back to 0. N is the number of elements inside the "
         "collection.",
     .acl_categories = "@keyspace @read @slow",
     .syntax = "cursor [MATCH pattern] [COUNT count] [TYPE type]"},
    {.name = "randomkey",
     .arity = 1,
     .flags = kReadOnly,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kAllShards,
     .handler = RandomKey,
     .combine = CombineRandomKey,
     .group = "generic",
     .summary = "Return a random key from the keyspace",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @read @slow"},
    {.name = "dbsize",
     .arity = 1,
     .flags = kReadOnly | kFast,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kAllShards,
     .handler = DbSize,
     .combine = CombineSum,
     .group = "server",
     .summary = "Return the number of keys in the selected database",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@keyspace @read @fast"},
    {.name = "delprefix",
     .arity = 2,
     .flags = kWrite,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kAllShards,
     .handler = DelPrefix,
     .combine = CombineSum,
     .group = "generic",
     .summary = "Delete every key that starts with the given prefix",
     .since = "1.0.0",
     .complexity = "O(N) where N is the number of keys in the database",
     .acl_categories = "@keyspace @write @slow @dangerous",
     .syntax = "prefix"},
    {.name = "flushall",
     .arity = -1,
     .flags = kWrite,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kAllShards,
     .handler = Flush,
     .combine = CombineOk,
     .group = "server",
     .summary = "Remove all keys from all databases",
     .since = "1.0.0",
     .complexity = "O(N) where N is the total number of keys in all databases",
     .acl_categories = "@keyspace @write @slow @dangerous",
     .syntax = "[ASYNC | SYNC]"},
    {.name = "flushdb",
     .arity = -1,
     .flags = kWrite,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kAllShards,
     .handler = Flush,
     .combine = CombineOk,
     .group = "server",
     .summary = "Remove all keys from the current database",
     .since = "1.0.0",
     .complexity = "O(N) where N is the number of keys in the selected database",
     .acl_categories = "@keyspace @write @slow @dangerous",
     .syntax = "[ASYNC | SYNC]"},
};

}  // namespace

std::span<const CommandSpec> KeyCommands() { return kKeyCommands; }

}  // namespace keep::commands
