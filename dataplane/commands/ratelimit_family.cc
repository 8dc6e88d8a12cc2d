// Rate-limit commands (design §2.6): redis-cell's CL.THROTTLE (GCRA) and Keep's RATE.FIXED
// (fixed window). Both keep their state in an ordinary string key with an expiry, as redis-cell
// does, so GET/TTL/DEL see it and the key moves with its slot like any other.
#include <string>

#include "dataplane/commands/command_table.h"
#include "dataplane/commands/family_util.h"
#include "dataplane/commands/gcra.h"
#include "dataplane/commands/string_util.h"

namespace keep::commands {
namespace {

using core::Store;

// redis-cell's harness answers every failure as "Cell error: <description>" (no ERR prefix).
constexpr std::string_view kCellError = "Cell error: ";

// Rust's `str::parse::<i64>`, which redis-cell uses: an optional sign ('+' too), at least one
// digit, leading zeros allowed, nothing else, no overflow.
bool ParseRustI64(std::string_view text, int64_t* value) {
  size_t i = 0;
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    i = 1;
  }
  if (i == text.size()) return false;
  int64_t result = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c < '0' || c > '9') return false;
    int digit = c - '0';
    if (__builtin_mul_overflow(result, 10, &result) ||
        __builtin_add_overflow(result, negative ? -digit : digit, &result)) {
      return false;
    }
  }
  *value = result;
  return true;
}

// "Cell error: Couldn't parse as integer: <arg>". redis-cell echoes the argument (and panics on
// one that is not UTF-8); Keep echoes printable ASCII and shows other bytes as '?', so the
// error line stays readable for any client.
void ReplyNotInteger(CommandContext& ctx, std::string_view arg) {
  constexpr size_t kMaxEcho = 128;
  std::string message(kCellError);
  message.append("Couldn't parse as integer: ");
  for (size_t i = 0; i < arg.size() && i < kMaxEcho; ++i) {
    char c = arg[i];
    message.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  if (arg.size() > kMaxEcho) message.append("...");
  ReplyError(ctx, message);
}

std::string_view QuotaErrorText(gcra::QuotaError error) {
  switch (error) {
    case gcra::QuotaError::kNegativeBurst:
      return "Cell error: max_burst must be zero or greater";
    case gcra::QuotaError::kNonPositiveCount:
      return "Cell error: count must be greater than zero";
    case gcra::QuotaError::kNonPositivePeriod:
      return "Cell error: period must be greater than zero";
    case gcra::QuotaError::kNegativeQuantity:
      return "Cell error: quantity must be zero or greater";
    case gcra::QuotaError::kTooLarge:
      return "Cell error: rate limit parameters out of range";
    case gcra::QuotaError::kNone:
      break;
  }
  return "";
}

// The integer a rate-limit key holds; answers the error and returns false when it holds
// something else.
bool StoredInteger(CommandContext& ctx, Store::Ref ref, bool rust_rules, int64_t* value) {
  if (ctx.store.Type(ref) != core::ValueType::kString) {
    ReplyError(ctx, errors::kWrongType);
    return false;
  }
  if (ctx.store.IntegerValue(ref, value)) return true;
  std::string_view text = ctx.store.Value(ref);
  if (rust_rules ? ParseRustI64(text, value) : ParseInt64(text, value)) return true;
  // Rust's ParseIntError descriptions, as redis-cell's `?` would pass them on.
  ReplyError(ctx, rust_rules ? (text.empty() ? "Cell error: cannot parse integer from empty string"
                                             : "Cell error: invalid digit found in string")
                             : errors::kNotInteger);
  return false;
}

// Stores `value` at `key` to expire at `deadline_ms` (ref is the key's entry or null).
void StoreInteger(CommandContext& ctx, Store::Ref ref, std::string_view key, int64_t value,
                  int64_t deadline_ms) {
  if (ref == nullptr) {
    char buf[24];
    ref = ctx.store.Insert(key, std::string_view(buf, FormatInt64(value, buf)));
  } else {
    ctx.store.SetInteger(ref, value);
  }
  ctx.store.SetExpireAt(ref, deadline_ms);
}

// CL.THROTTLE key max_burst count period [quantity]
//   -> [limited, limit, remaining, retry_after_s, reset_after_s], redis-cell's reply.
// The key holds the theoretical arrival time in Unix nanoseconds (on Keep's millisecond clock).
void Throttle(CommandContext& ctx) {
  if (ctx.args.size() > 6) {
    ReplyError(ctx, WrongArity("cl.throttle"));
    return;
  }
  int64_t numbers[4] = {0, 0, 0, 1};  // max_burst, count, period, quantity
  for (size_t i = 2; i < ctx.args.size(); ++i) {
    if (!ParseRustI64(ctx.args[i], &numbers[i - 2])) {
      ReplyNotInteger(ctx, ctx.args[i]);
      return;
    }
  }
  gcra::Quota quota;
  gcra::QuotaError quota_error =
      gcra::MakeQuota(numbers[0], numbers[1], numbers[2], numbers[3], &quota);
  if (quota_error != gcra::QuotaError::kNone) {
    ReplyError(ctx, QuotaErrorText(quota_error));
    return;
  }

  std::string_view key = ctx.args[1];
  Store::Ref ref = ctx.store.Find(key);
  int64_t tat = -1;
  if (ref != nullptr && !StoredInteger(ctx, ref, true, &tat)) return;
  gcra::Decision decision;
  if (!gcra::Decide(quota, ctx.now_ms * gcra::kNanosPerMilli, tat, &decision)) {
    ReplyError(ctx, "Cell error: stored rate limit state out of range");
    return;
  }
  if (!decision.limited) {
    // Rounded up to the millisecond, so the key lives exactly as long as its TAT matters
    // (redis-cell truncates, but Redis keeps a key through its deadline millisecond).
    int64_t ttl_ms = (decision.ttl_ns + gcra::kNanosPerMilli - 1) / gcra::kNanosPerMilli;
    if (ttl_ms > 0) {
      StoreInteger(ctx, ref, key, decision.new_tat_ns, ctx.now_ms + ttl_ms);
    } else if (ref != nullptr) {
      ctx.store.Erase(ref);  // a zero TTL deletes, as Redis's SetExpire(0) does
    }
  }
  ctx.reply.ArrayHeader(5);
  ctx.reply.Integer(decision.limited ? 1 : 0);
  ctx.reply.Integer(quota.limit);
  ctx.reply.Integer(decision.remaining);
  ctx.reply.Integer(gcra::ReplySeconds(decision.retry_after_ns));
  ctx.reply.Integer(gcra::ReplySeconds(decision.reset_after_ns));
}

// RATE.FIXED key limit window-ms [cost] -> [allowed, remaining, reset_ms].
// A fixed window counter: the first request opens a window of window-ms (the key's expiry);
// requests are allowed while the window's total cost stays within `limit`; a denied request
// consumes nothing. reset_ms is the time left in the current window, 0 when none is open.
void RateFixed(CommandContext& ctx) {
  if (ctx.args.size() > 5) {
    ReplyError(ctx, WrongArity("rate.fixed"));
    return;
  }
  int64_t limit;
  int64_t window_ms;
  int64_t cost = 1;
  if (!ParseInt64(ctx.args[2], &limit) || !ParseInt64(ctx.args[3], &window_ms) ||
      (ctx.args.size() == 5 && !ParseInt64(ctx.args[4], &cost))) {
    ReplyError(ctx, errors::kNotInteger);
    return;
  }
  if (limit < 0) {
    ReplyError(ctx, "ERR limit must be zero or greater");
    return;
  }
  int64_t window_end;
  if (window_ms <= 0 || __builtin_add_overflow(ctx.now_ms, window_ms, &window_end)) {
    ReplyError(ctx, InvalidExpireError("rate.fixed"));
    return;
  }
  if (cost < 0) {
    ReplyError(ctx, "ERR cost must be zero or greater");
    return;
  }

  std::string_view key = ctx.args[1];
  Store::Ref ref = ctx.store.Find(key);
  int64_t used = 0;
  if (ref != nullptr && !StoredInteger(ctx, ref, false, &used)) return;
  int64_t deadline = ref != nullptr ? ctx.store.ExpireAt(ref) : core::kNoExpiry;
  // A counter without a window (e.g. written by SET) starts one now.
  if (ref != nullptr && deadline == core::kNoExpiry) {
    deadline = window_end;
    ctx.store.SetExpireAt(ref, deadline);
  }
  // In 128 bits: a counter written by SET may be anything.
  const __int128 left = static_cast<__int128>(limit) - used;
  const bool allowed = cost <= left;
  if (allowed && cost > 0) {
    if (ref == nullptr) deadline = window_end;
    used += cost;  // cannot overflow: used + cost <= limit
    StoreInteger(ctx, ref, key, used, deadline);
  }
  __int128 remaining = static_cast<__int128>(limit) - used;
  if (remaining < 0) remaining = 0;
  ctx.reply.ArrayHeader(3);
  ctx.reply.Integer(allowed ? 1 : 0);
  ctx.reply.Integer(remaining > INT64_MAX ? INT64_MAX : static_cast<int64_t>(remaining));
  ctx.reply.Integer(deadline == core::kNoExpiry ? 0 : deadline - ctx.now_ms);
}

constexpr CommandSpec kRateLimitCommands[] = {
    {.name = "cl.throttle",
     .arity = -5,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Throttle,
     .group = "generic",
     .summary = "Rate limit with GCRA, as redis-cell: [limited, limit, remaining, retry after, "
                "reset after]",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @fast",
     .syntax = "key max_burst count period [quantity]"},
    {.name = "rate.fixed",
     .arity = -4,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = RateFixed,
     .group = "generic",
     .summary = "Fixed window rate limit (Keep): [allowed, remaining, reset ms]",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @fast",
     .syntax = "key limit window-ms [cost]"},
};

}  // namespace

std::span<const CommandSpec> RateLimitCommands() { return kRateLimitCommands; }

}  // namespace keep::commands
