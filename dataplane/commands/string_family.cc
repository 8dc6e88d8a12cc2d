// String commands (design §2.6): GET, SET and its variants, MGET/MSET across shards, ranges,
// and Valkey's compare-and-set/compare-and-delete for locks. Replies and errors are Redis
// 7.0.15's (src/t_string.c) byte for byte; IFEQ and DELIFEQ follow Valkey 8.1/9.0.
#include <algorithm>
#include <cstring>

#include "dataplane/commands/command_table.h"
#include "dataplane/commands/family_util.h"
#include "dataplane/commands/string_util.h"

namespace keep::commands {
namespace {

using core::Store;

// Option bits of SET and GETEX: Redis's OBJ_* flags plus Valkey's IFEQ.
enum : uint32_t {
  kNx = 1u << 0,
  kXx = 1u << 1,
  kEx = 1u << 2,
  kPx = 1u << 3,
  kKeepTtl = 1u << 4,
  kGet = 1u << 5,
  kExAt = 1u << 6,
  kPxAt = 1u << 7,
  kPersist = 1u << 8,
  kIfEq = 1u << 9,
};
constexpr uint32_t kAnyExpire = kEx | kPx | kExAt | kPxAt;

constexpr std::string_view kTooLong =
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

struct ExtendedArgs {
  uint32_t flags = 0;
  std::string_view expire;      // the EX/PX/EXAT/PXAT operand
  std::string_view comparison;  // the IFEQ operand
};

uint32_t ExpireOption(std::string_view opt) {
  if (EqualsIgnoreCase(opt, "ex")) return kEx;
  if (EqualsIgnoreCase(opt, "px")) return kPx;
  if (EqualsIgnoreCase(opt, "exat")) return kExAt;
  if (EqualsIgnoreCase(opt, "pxat")) return kPxAt;
  return 0;
}

// Redis's parseExtendedStringArgumentsOrReply. `for_set` selects SET's options (NX, XX, GET,
// KEEPTTL, IFEQ) over GETEX's (PERSIST). Repeating an option is accepted (the last operand
// wins), a conflicting one is a syntax error; operands are validated later, as in Redis.
bool ParseExtendedArgs(std::span<const std::string_view> args, bool for_set, ExtendedArgs* out) {
  uint32_t& flags = out->flags;
  for (size_t j = for_set ? 3 : 2; j < args.size(); ++j) {
    std::string_view opt = args[j];
    bool has_next = j + 1 < args.size();
    if (for_set && EqualsIgnoreCase(opt, "nx") && !(flags & (kXx | kIfEq))) {
      flags |= kNx;
    } else if (for_set && EqualsIgnoreCase(opt, "xx") && !(flags & (kNx | kIfEq))) {
      flags |= kXx;
    } else if (for_set && EqualsIgnoreCase(opt, "get")) {
      flags |= kGet;
    } else if (for_set && EqualsIgnoreCase(opt, "keepttl") && !(flags & kAnyExpire)) {
      flags |= kKeepTtl;
    } else if (!for_set && EqualsIgnoreCase(opt, "persist") && !(flags & kAnyExpire)) {
      flags |= kPersist;
    } else if (for_set && EqualsIgnoreCase(opt, "ifeq") && has_next &&
               !(flags & (kNx | kXx | kIfEq))) {
      flags |= kIfEq;
      out->comparison = args[++j];
    } else {
      uint32_t kind = ExpireOption(opt);
      if (kind == 0 || !has_next || (flags & (kKeepTtl | kPersist | (kAnyExpire & ~kind)))) {
        return false;
      }
      flags |= kind;
      out->expire = args[++j];
    }
  }
  return true;
}

// Redis's getExpireMillisecondsOrReply: the deadline on the shard clock for an EX/PX/EXAT/PXAT
// operand, or an error reply.
bool DeadlineOrReply(CommandContext& ctx, std::string_view text, uint32_t kind,
                     std::string_view command, int64_t* deadline) {
  int64_t ms;
  if (!ParseInt64(text, &ms)) {
    ReplyError(ctx, errors::kNotInteger);
    return false;
  }
  bool seconds = (kind & (kEx | kExAt)) != 0;
  if (ms <= 0 || (seconds && ms > INT64_MAX / 1000)) {
    ReplyError(ctx, InvalidExpireError(command));
    return false;
  }
  if (seconds) ms *= 1000;
  // Redis lets the addition wrap and then sees a non-positive deadline.
  if ((kind & (kEx | kPx)) && __builtin_add_overflow(ms, ctx.now_ms, &ms)) ms = 0;
  if (ms <= 0) {
    ReplyError(ctx, InvalidExpireError(command));
    return false;
  }
  // A Unix time in the past may land at or below zero on the shard clock, where -1 would read
  // as no expiry: any past deadline will do.
  *deadline = (kind & (kExAt | kPxAt)) ? std::max<int64_t>(ctx.ShardFromUnix(ms), 1) : ms;
  return true;
}

// Stores `value` at `key` (found at `ref`, or absent when null) as Redis's setKey does: an
// overwritten key loses its TTL unless `keep_ttl`.
Store::Ref Write(Store& store, Store::Ref ref, std::string_view key, std::string_view value,
                 bool keep_ttl) {
  if (ref != nullptr && store.Type(ref) != core::ValueType::kString) {
    // SET replaces a key of any type, as in Redis.
    store.Erase(ref);
    ref = nullptr;
  }
  if (ref == nullptr) return store.Insert(key, value);
  store.SetValue(ref, value);
  if (!keep_ttl && store.ExpireAt(ref) != core::kNoExpiry) {
    store.SetExpireAt(ref, core::kNoExpiry);
  }
  return ref;
}

// Redis's checkStringLength: whether a string of size + append bytes is allowed.
bool CheckStringLength(CommandContext& ctx, uint64_t size, uint64_t append) {
  uint64_t total = size + append;
  if (total < size || total > static_cast<uint64_t>(ctx.limits.proto_max_bulk_len)) {
    ReplyError(ctx, kTooLong);
    return false;
  }
  return true;
}

// The old value (or nil) as GET would answer it; used by SET GET, GETSET, GETDEL.
void ReplyValue(CommandContext& ctx, Store::Ref ref) {
  if (ref == nullptr) {
    ctx.reply.Null();
  } else {
    ctx.reply.Bulk(ctx.store.Value(ref));
  }
}

enum class SetReply { kOk, kInteger };  // SET answers OK/nil, SETNX 1/0

// Redis's setGenericCommand (SET, SETNX, SETEX, PSETEX) with Valkey's IFEQ.
void SetGeneric(CommandContext& ctx, uint32_t flags, std::string_view key, std::string_view value,
                std::string_view expire, std::string_view command, std::string_view comparison,
                SetReply style) {
  int64_t deadline = 0;
  bool has_expire = (flags & kAnyExpire) != 0;
  if (has_expire && !DeadlineOrReply(ctx, expire, flags & kAnyExpire, command, &deadline)) return;

  bool get = (flags & kGet) != 0;
  Store::Ref ref = ctx.store.Find(key);
  if (ref != nullptr && (get || (flags & kIfEq)) &&
      ctx.store.Type(ref) != core::ValueType::kString) {
    ReplyError(ctx, errors::kWrongType);
    return;
  }
  if (get) ReplyValue(ctx, ref);

  bool abort = (flags & kIfEq) ? ref == nullptr || ctx.store.Value(ref) != comparison
                               : ((flags & kNx) && ref != nullptr) || ((flags & kXx) && !ref);
  if (abort) {
    if (get) return;
    if (style == SetReply::kInteger) {
      ctx.reply.Integer(0);
    } else {
      ctx.reply.Null();
    }
    return;
  }

  ref = Write(ctx.store, ref, key, value, (flags & kKeepTtl) || has_expire);
  if (has_expire) ctx.store.SetExpireAt(ref, deadline);
  if (get) return;
  if (style == SetReply::kInteger) {
    ctx.reply.Integer(1);
  } else {
    ctx.reply.Ok();
  }
}

// GET key
void Get(CommandContext& ctx) {
  bool wrong_type;
  Store::Ref ref = FindString(ctx, ctx.args[1], &wrong_type);
  if (!wrong_type) ReplyValue(ctx, ref);
}

// SET key value [NX | XX | IFEQ comparison-value] [GET]
//     [EX seconds | PX milliseconds | EXAT unix-seconds | PXAT unix-milliseconds | KEEPTTL]
// OK, or nil when a condition fails; with GET, the old value (or nil) instead.
void Set(CommandContext& ctx) {
  std::string_view key = ctx.args[1];
  std::string_view value = ctx.args[2];
  if (ctx.args.size() == 3) {  // the benchmarked case: nothing to parse
    Write(ctx.store, ctx.store.Find(key), key, value, false);
    ctx.reply.Ok();
    return;
  }
  ExtendedArgs ext;
  if (!ParseExtendedArgs(ctx.args, true, &ext)) {
    ReplyError(ctx, errors::kSyntax);
    return;
  }
  SetGeneric(ctx, ext.flags, key, value, ext.expire, "set", ext.comparison, SetReply::kOk);
}

// SETNX key value -> 1 if set, 0 if the key existed.
void SetNx(CommandContext& ctx) {
  SetGeneric(ctx, kNx, ctx.args[1], ctx.args[2], {}, "setnx", {}, SetReply::kInteger);
}

// SETEX key seconds value
void SetEx(CommandContext& ctx) {
  SetGeneric(ctx, kEx, ctx.args[1], ctx.args[3], ctx.args[2], "setex", {}, SetReply::kOk);
}

// PSETEX key milliseconds value
void PSetEx(CommandContext& ctx) {
  SetGeneric(ctx, kPx, ctx.args[1], ctx.args[3], ctx.args[2], "psetex", {}, SetReply::kOk);
}

// GETSET key value -> the old value or nil; the new value has no TTL.
void GetSet(CommandContext& ctx) {
  bool wrong_type;
  Store::Ref ref = FindString(ctx, ctx.args[1], &wrong_type);
  if (wrong_type) return;
  ReplyValue(ctx, ref);
  Write(ctx.store, ref, ctx.args[1], ctx.args[2], false);
}

// GETDEL key -> the value (then deleted) or nil.
void GetDel(CommandContext& ctx) {
  bool wrong_type;
  Store::Ref ref = FindString(ctx, ctx.args[1], &wrong_type);
  if (wrong_type) return;
  ReplyValue(ctx, ref);
  if (ref != nullptr) ctx.store.Erase(ref);
}

// GETEX key [EX seconds | PX milliseconds | EXAT unix-seconds | PXAT unix-milliseconds | PERSIST]
void GetEx(CommandContext& ctx) {
  ExtendedArgs ext;
  if (!ParseExtendedArgs(ctx.args, false, &ext)) {
    ReplyError(ctx, errors::kSyntax);
    return;
  }
  bool wrong_type;
  Store::Ref ref = FindString(ctx, ctx.args[1], &wrong_type);
  if (wrong_type) return;
  if (ref == nullptr) {
    ctx.reply.Null();
    return;
  }
  // As in Redis 7.0, a missing key answers nil before the expire operand is looked at.
  int64_t deadline = 0;
  uint32_t kind = ext.flags & kAnyExpire;
  if (kind != 0 && !DeadlineOrReply(ctx, ext.expire, kind, "getex", &deadline)) return;
  ctx.reply.Bulk(ctx.store.Value(ref));
  if ((kind & (kExAt | kPxAt)) && deadline <= ctx.now_ms) {
    ctx.store.Erase(ref);
  } else if (kind != 0) {
    ctx.store.SetExpireAt(ref, deadline);
  } else if (ext.flags & kPersist) {
    ctx.store.SetExpireAt(ref, core::kNoExpiry);
  }
}

// MGET key [key ...] -> an array of values, nil for missing keys. Split by shard: each part
// writes one fragment per key and CombineKeyFragments restores request order.
void MGet(CommandContext& ctx) {
  std::span<const std::string_view> keys = ctx.args.subspan(1);
  if (ctx.part == nullptr) ctx.reply.ArrayHeader(keys.size());
  for (std::string_view key : keys) {
    MarkFragment(ctx);
    Store::Ref ref = ctx.store.Find(key);
    // MGET answers nil for a key of another type, as Redis does.
    ReplyValue(ctx,
               ref != nullptr && ctx.store.Type(ref) == core::ValueType::kString ? ref : nullptr);
  }
  MarkFragment(ctx);
}

// MSET key value [key value ...] -> OK. Atomic within each shard only (design §2.4).
void MSet(CommandContext& ctx) {
  if (ctx.args.size() % 2 == 0) {
    ReplyError(ctx, WrongArity("mset"));
    return;
  }
  for (size_t i = 1; i + 1 < ctx.args.size(); i += 2) {
    std::string_view key = ctx.args[i];
    Write(ctx.store, ctx.store.Find(key), key, ctx.args[i + 1], false);
  }
  if (ctx.part == nullptr) ctx.reply.Ok();
}

// MSETNX key value [key value ...] -> 1 if every key was set, 0 (nothing set) if any existed.
// Its keys share one slot (checked by the plan), so it is atomic.
void MSetNx(CommandContext& ctx) {
  if (ctx.args.size() % 2 == 0) {
    ReplyError(ctx, WrongArity("msetnx"));
    return;
  }
  for (size_t i = 1; i < ctx.args.size(); i += 2) {
    if (ctx.store.Find(ctx.args[i]) != nullptr) {
      ctx.reply.Integer(0);
      return;
    }
  }
  for (size_t i = 1; i + 1 < ctx.args.size(); i += 2) {
    std::string_view key = ctx.args[i];
    Write(ctx.store, ctx.store.Find(key), key, ctx.args[i + 1], false);
  }
  ctx.reply.Integer(1);
}

// APPEND key value -> the new length.
void Append(CommandContext& ctx) {
  std::string_view key = ctx.args[1];
  std::string_view value = ctx.args[2];
  bool wrong_type;
  Store::Ref ref = FindString(ctx, key, &wrong_type);
  if (wrong_type) return;
  if (ref == nullptr) {
    ctx.store.Insert(key, value);
    ctx.reply.Integer(static_cast<int64_t>(value.size()));
    return;
  }
  size_t old_size = ctx.store.Value(ref).size();
  if (!CheckStringLength(ctx, old_size, value.size())) return;
  char* bytes = ctx.store.ResizeValue(ref, old_size + value.size());
  if (!value.empty()) std::memcpy(bytes + old_size, value.data(), value.size());
  ctx.reply.Integer(static_cast<int64_t>(old_size + value.size()));
}

// STRLEN key -> the value's length, 0 when missing.
void StrLen(CommandContext& ctx) {
  bool wrong_type;
  Store::Ref ref = FindString(ctx, ctx.args[1], &wrong_type);
  if (wrong_type) return;
  ctx.reply.Integer(ref == nullptr ? 0 : static_cast<int64_t>(ctx.store.Value(ref).size()));
}

// GETRANGE key start end (and the deprecated SUBSTR) -> the inclusive substring; negative
// offsets count from the end.
void GetRange(CommandContext& ctx) {
  int64_t start;
  int64_t end;
  if (!ParseInt64(ctx.args[2], &start) || !ParseInt64(ctx.args[3], &end)) {
    ReplyError(ctx, errors::kNotInteger);
    return;
  }
  bool wrong_type;
  Store::Ref ref = FindString(ctx, ctx.args[1], &wrong_type);
  if (wrong_type) return;
  if (ref == nullptr) {
    ctx.reply.Bulk("");
    return;
  }
  std::string_view value = ctx.store.Value(ref);
  int64_t length = static_cast<int64_t>(value.size());
  if (start < 0 && end < 0 && start > end) {
    ctx.reply.Bulk("");
    return;
  }
  if (start < 0) start += length;
  if (end < 0) end += length;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= length) end = length - 1;
  if (start > end || length == 0) {
    ctx.reply.Bulk("");
    return;
  }
  ctx.reply.Bulk(value.substr(static_cast<size_t>(start), static_cast<size_t>(end - start + 1)));
}

// SETRANGE key offset value -> the new length; gaps are zero bytes.
void SetRange(CommandContext& ctx) {
  int64_t offset;
  if (!ParseInt64(ctx.args[2], &offset)) {
    ReplyError(ctx, errors::kNotInteger);
    return;
  }
  if (offset < 0) {
    ReplyError(ctx, "ERR offset is out of range");
    return;
  }
  std::string_view key = ctx.args[1];
  std::string_view value = ctx.args[3];
  uint64_t at = static_cast<uint64_t>(offset);
  bool wrong_type;
  Store::Ref ref = FindString(ctx, key, &wrong_type);
  if (wrong_type) return;
  size_t old_size = 0;
  if (ref == nullptr) {
    if (value.empty()) {
      ctx.reply.Integer(0);
      return;
    }
    if (!CheckStringLength(ctx, at, value.size())) return;
    ref = ctx.store.Insert(key, {});
  } else {
    old_size = ctx.store.Value(ref).size();
    if (value.empty()) {
      ctx.reply.Integer(static_cast<int64_t>(old_size));
      return;
    }
    if (!CheckStringLength(ctx, at, value.size())) return;
  }
  size_t new_size = std::max<size_t>(old_size, at + value.size());
  char* bytes = ctx.store.ResizeValue(ref, new_size);
  std::memcpy(bytes + at, value.data(), value.size());
  ctx.reply.Integer(static_cast<int64_t>(new_size));
}

// DELIFEQ key value -> 1 if the key held exactly `value` and was deleted, else 0 (Valkey 9.0).
void DelIfEq(CommandContext& ctx) {
  bool wrong_type;
  Store::Ref ref = FindString(ctx, ctx.args[1], &wrong_type);
  if (wrong_type) return;
  if (ref == nullptr || ctx.store.Value(ref) != ctx.args[2]) {
    ctx.reply.Integer(0);
    return;
  }
  ctx.store.Erase(ref);
  ctx.reply.Integer(1);
}

constexpr std::string_view kGetRangeComplexity =
    "O(N) where N is the length of the returned string. The complexity is ultimately determined "
    "by the returned length, but because creating a substring from an existing string is very "
    "cheap, it can be considered O(1) for small strings.";

// Metadata from Redis 7.0's src/commands/*.json (DELIFEQ from Valkey 9.0's).
constexpr CommandSpec kStringCommands[] = {
    {.name = "get",
     .arity = 2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Get,
     .group = "string",
     .summary = "Get the value of a key",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@read @string @fast",
     .syntax = "key"},
    {.name = "set",
     .arity = -3,
     .flags = kWrite | kDenyOom,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Set,
     .group = "string",
     .summary = "Set the string value of a key",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @slow",
     .syntax = "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | "
               "PXAT unix-time-milliseconds | KEEPTTL]"},
    {.name = "setnx",
     .arity = 3,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = SetNx,
     .group = "string",
     .summary = "Set the value of a key, only if the key does not exist",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @fast",
     .syntax = "key value"},
    {.name = "setex",
     .arity = 4,
     .flags = kWrite | kDenyOom,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = SetEx,
     .group = "string",
     .summary = "Set the value and expiration of a key",
     .since = "2.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @slow",
     .syntax = "key seconds value"},
    {.name = "psetex",
     .arity = 4,
     .flags = kWrite | kDenyOom,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = PSetEx,
     .group = "string",
     .summary = "Set the value and expiration in milliseconds of a key",
     .since = "2.6.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @slow",
     .syntax = "key milliseconds value"},
    {.name = "getset",
     .arity = 3,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = GetSet,
     .group = "string",
     .summary = "Set the string value of a key and return its old value",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @fast",
     .syntax = "key value"},
    {.name = "getdel",
     .arity = 2,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = GetDel,
     .group = "string",
     .summary = "Get the value of a key and delete the key",
     .since = "6.2.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @fast",
     .syntax = "key"},
    {.name = "getex",
     .arity = -2,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = GetEx,
     .group = "string",
     .summary = "Get the value of a key and optionally set its expiration",
     .since = "6.2.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @fast",
     .syntax = "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT "
               "unix-time-milliseconds | PERSIST]"},
    {.name = "mget",
     .arity = -2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = -1,
     .key_step = 1,
     .routing = Routing::kEachKey,
     .handler = MGet,
     .combine = CombineKeyFragments,
     .group = "string",
     .summary = "Get the values of all the given keys",
     .since = "1.0.0",
     .complexity = "O(N) where N is the number of keys to retrieve.",
     .acl_categories = "@read @string @fast",
     .syntax = "key [key ...]"},
    {.name = "mset",
     .arity = -3,
     .flags = kWrite | kDenyOom,
     .first_key = 1,
     .last_key = -1,
     .key_step = 2,
     .routing = Routing::kEachKey,
     .handler = MSet,
     .combine = CombineOk,
     .group = "string",
     .summary = "Set multiple keys to multiple values",
     .since = "1.0.1",
     .complexity = "O(N) where N is the number of keys to set.",
     .acl_categories = "@write @string @slow",
     .syntax = "key value [key value ...]"},
    {.name = "msetnx",
     .arity = -3,
     .flags = kWrite | kDenyOom,
     .first_key = 1,
     .last_key = -1,
     .key_step = 2,
     .routing = Routing::kSingleKey,
     .handler = MSetNx,
     .group = "string",
     .summary = "Set multiple keys to multiple values, only if none of the keys exist",
     .since = "1.0.1",
     .complexity = "O(N) where N is the number of keys to set.",
     .acl_categories = "@write @string @slow",
     .syntax = "key value [key value ...]"},
    {.name = "append",
     .arity = 3,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Append,
     .group = "string",
     .summary = "Append a value to a key",
     .since = "2.0.0",
     .complexity =
         "O(1). The amortized time complexity is O(1) assuming the appended value is small and "
         "the already present value is of any size, since the dynamic string library used by "
         "Redis will double the free space available on every reallocation.",
     .acl_categories = "@write @string @fast",
     .syntax = "key value"},
    {.name = "strlen",
     .arity = 2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = StrLen,
     .group = "string",
     .summary = "Get the length of the value stored in a key",
     .since = "2.2.0",
     .complexity = "O(1)",
     .acl_categories = "@read @string @fast",
     .syntax = "key"},
    {.name = "getrange",
     .arity = 4,
     .flags = kReadOnly,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = GetRange,
     .group = "string",
     .summary = "Get a substring of the string stored at a key",
     .since = "2.4.0",
     .complexity = kGetRangeComplexity,
     .acl_categories = "@read @string @slow",
     .syntax = "key start end"},
    {.name = "substr",
     .arity = 4,
     .flags = kReadOnly,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = GetRange,
     .group = "string",
     .summary = "Get a substring of the string stored at a key",
     .since = "1.0.0",
     .complexity = kGetRangeComplexity,
     .acl_categories = "@read @string @slow",
     .syntax = "key start end"},
    {.name = "setrange",
     .arity = 4,
     .flags = kWrite | kDenyOom,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = SetRange,
     .group = "string",
     .summary = "Overwrite part of a string at key starting at the specified offset",
     .since = "2.2.0",
     .complexity =
         "O(1), not counting the time taken to copy the new string in place. Usually, this "
         "string is very small so the amortized complexity is O(1). Otherwise, complexity is "
         "O(M) with M being the length of the value argument.",
     .acl_categories = "@write @string @slow",
     .syntax = "key offset value"},
    {.name = "delifeq",
     .arity = 3,
     .flags = kWrite,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = DelIfEq,
     .group = "string",
     .summary = "Delete key if value matches string.",
     .since = "9.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @slow",
     .syntax = "key value"},
};

}  // namespace

std::span<const CommandSpec> StringCommands() { return kStringCommands; }

}  // namespace keep::commands
