// Counter commands (design §2.6): INCR, DECR, INCRBY, DECRBY on 64-bit signed integers and
// INCRBYFLOAT on long doubles, with Redis 7.0.15's parsing, overflow errors and number spelling
// (src/t_string.c, src/util.c). Every one keeps the key's TTL, as Redis's dbReplaceValue does.
#include <cmath>

#include "dataplane/commands/command_table.h"
#include "dataplane/commands/family_util.h"
#include "dataplane/commands/string_util.h"

namespace keep::commands {
namespace {

using core::Store;

// Stores `value` at `key` (absent when `ref` is null) without touching its TTL.
void SaveCounter(Store& store, Store::Ref ref, std::string_view key, std::string_view value) {
  if (ref == nullptr) {
    store.Insert(key, value);
  } else {
    store.SetValue(ref, value);
  }
}

// Redis's incrDecrCommand.
void IncrBy(CommandContext& ctx, int64_t increment) {
  std::string_view key = ctx.args[1];
  bool wrong_type;
  Store::Ref ref = FindString(ctx, key, &wrong_type);
  if (wrong_type) return;
  int64_t value = 0;
  if (ref != nullptr && !ctx.store.IntegerValue(ref, &value) &&
      !ParseInt64(ctx.store.Value(ref), &value)) {
    ReplyError(ctx, errors::kNotInteger);
    return;
  }
  int64_t result;
  if (__builtin_add_overflow(value, increment, &result)) {
    ReplyError(ctx, errors::kOverflow);
    return;
  }
  if (ref != nullptr) {
    ctx.store.SetInteger(ref, result);
  } else {
    char digits[24];
    ctx.store.Insert(key, std::string_view(digits, FormatInt64(result, digits)));
  }
  ctx.reply.Integer(result);
}

// INCR key -> the new value.
void Incr(CommandContext& ctx) { IncrBy(ctx, 1); }

// DECR key -> the new value.
void Decr(CommandContext& ctx) { IncrBy(ctx, -1); }

// INCRBY key increment -> the new value.
void IncrByCommand(CommandContext& ctx) {
  int64_t increment;
  if (!ParseInt64(ctx.args[2], &increment)) {
    ReplyError(ctx, errors::kNotInteger);
    return;
  }
  IncrBy(ctx, increment);
}

// DECRBY key decrement -> the new value.
void DecrBy(CommandContext& ctx) {
  int64_t decrement;
  if (!ParseInt64(ctx.args[2], &decrement)) {
    ReplyError(ctx, errors::kNotInteger);
    return;
  }
  // -INT64_MIN does not exist; Redis 7.0 says so with its own message.
  if (decrement == INT64_MIN) {
    ReplyError(ctx, "ERR decrement would overflow");
    return;
  }
  IncrBy(ctx, -decrement);
}

// INCRBYFLOAT key increment -> the new value as a bulk string, spelled as Redis stores it.
void IncrByFloat(CommandContext& ctx) {
  std::string_view key = ctx.args[1];
  bool wrong_type;
  Store::Ref ref = FindString(ctx, key, &wrong_type);
  if (wrong_type) return;
  long double value = 0;
  long double increment;
  if ((ref != nullptr && !ParseLongDouble(ctx.store.Value(ref), &value)) ||
      !ParseLongDouble(ctx.args[2], &increment)) {
    ReplyError(ctx, errors::kNotFloat);
    return;
  }
  value += increment;
  if (std::isnan(value) || std::isinf(value)) {
    ReplyError(ctx, "ERR increment would produce NaN or Infinity");
    return;
  }
  char text[kMaxLongDoubleChars];
  size_t length = FormatLongDouble(value, text);
  std::string_view spelled(text, length);
  SaveCounter(ctx.store, ref, key, spelled);
  ctx.reply.Bulk(spelled);
}

// Metadata from Redis 7.0's src/commands/*.json.
constexpr CommandSpec kCounterCommands[] = {
    {.name = "incr",
     .arity = 2,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Incr,
     .group = "string",
     .summary = "Increment the integer value of a key by one",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @fast",
     .syntax = "key"},
    {.name = "decr",
     .arity = 2,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Decr,
     .group = "string",
     .summary = "Decrement the integer value of a key by one",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @fast",
     .syntax = "key"},
    {.name = "incrby",
     .arity = 3,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = IncrByCommand,
     .group = "string",
     .summary = "Increment the integer value of a key by the given amount",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @fast",
     .syntax = "key increment"},
    {.name = "decrby",
     .arity = 3,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = DecrBy,
     .group = "string",
     .summary = "Decrement the integer value of a key by the given number",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @fast",
     .syntax = "key decrement"},
    {.name = "incrbyfloat",
     .arity = 3,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = IncrByFloat,
     .group = "string",
     .summary = "Increment the float value of a key by the given amount",
     .since = "2.6.0",
     .complexity = "O(1)",
     .acl_categories = "@write @string @fast",
     .syntax = "key increment"},
};

}  // namespace

std::span<const CommandSpec> CounterCommands() { return kCounterCommands; }

}  // namespace keep::commands
