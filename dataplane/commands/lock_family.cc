// Keep's lock commands (design §2.6, §3.5): LOCK, UNLOCK, LOCKEXTEND, LOCKINFO.
//
// A lock is a key of type kLock whose value is the fencing token (8 bytes, host order) followed by
// the owner's bytes, with the lease as the key's expiry; so DEL, EXISTS, TTL and expiry treat it
// like any key, and string commands that check the type answer WRONGTYPE.
//
// Fencing tokens come from the slot's counter (core::SlotState), not from the key: a lock that
// expires and is taken again gets a larger token, and the counter moves with the slot on handoff.
// LOCK by the owner that already holds the lock renews the lease and answers the *same* token, so
// a client retrying a LOCK whose reply it lost does not invalidate the token it may already use.
#include <cstring>
#include <string>

#include "dataplane/commands/command_table.h"
#include "dataplane/commands/family_util.h"
#include "dataplane/commands/plan.h"
#include "dataplane/commands/string_util.h"

namespace keep::commands {
namespace {

using core::Store;
using core::ValueType;

constexpr size_t kTokenBytes = sizeof(uint64_t);

// A lock's value, read from the store.
struct LockValue {
  uint64_t token = 0;
  std::string_view owner;
};

LockValue ReadLock(std::string_view value) {
  LockValue lock;
  if (value.size() >= kTokenBytes) {
    std::memcpy(&lock.token, value.data(), kTokenBytes);
    lock.owner = value.substr(kTokenBytes);
  }
  return lock;
}

// Builds token + owner in a stack buffer when it fits (the common case), else in `spill`.
std::string_view EncodeLock(uint64_t token, std::string_view owner, char* buf, size_t buf_size,
                            std::string* spill) {
  size_t size = kTokenBytes + owner.size();
  char* out = buf;
  if (size > buf_size) {
    spill->resize(size);
    out = spill->data();
  }
  std::memcpy(out, &token, kTokenBytes);
  if (!owner.empty()) std::memcpy(out + kTokenBytes, owner.data(), owner.size());
  return {out, size};
}

// ttl-ms of LOCK/LOCKEXTEND: a positive integer no larger than --max-lock-ttl.
bool LockTtlOrReply(CommandContext& ctx, std::string_view text, std::string_view command,
                    int64_t* ttl_ms) {
  if (!ParseInt64(text, ttl_ms) || *ttl_ms <= 0) {
    ReplyError(ctx, InvalidExpireError(command));
    return false;
  }
  if (*ttl_ms > ctx.limits.max_lock_ttl_ms) {
    std::string message = "ERR lock ttl exceeds max-lock-ttl (";
    message.append(std::to_string(ctx.limits.max_lock_ttl_ms)).append(" ms)");
    ReplyError(ctx, message);
    return false;
  }
  return true;
}

// The lock at `key`, or nullptr when unlocked; answers WRONGTYPE (and sets *wrong_type) when the
// key holds something else.
Store::Ref FindLock(CommandContext& ctx, std::string_view key, bool* wrong_type) {
  Store::Ref ref = ctx.store.Find(key);
  *wrong_type = ref != nullptr && ctx.store.Type(ref) != ValueType::kLock;
  if (*wrong_type) {
    ReplyError(ctx, errors::kWrongType);
    return nullptr;
  }
  return ref;
}

// LOCK key owner ttl-ms -> the fencing token, or nil when another owner holds the lock.
void Lock(CommandContext& ctx) {
  std::string_view key = ctx.args[1];
  std::string_view owner = ctx.args[2];
  int64_t ttl_ms;
  if (!LockTtlOrReply(ctx, ctx.args[3], "lock", &ttl_ms)) return;
  // On one shard outside a cluster the planner leaves the slot to the commands that need it.
  const uint32_t slot_index = ctx.slot != kNoSlot ? ctx.slot : (*ctx.slot_of)(key);
  core::SlotState& slot = (*ctx.slots)[slot_index];
  if (ctx.now_ms < slot.lock_quarantine_until_ms) {
    // A lock granted by a crashed former owner of this slot may still be held (design §3.5).
    std::string message = "TRYAGAIN lock quarantine in effect for this slot, retry in ";
    message.append(std::to_string(slot.lock_quarantine_until_ms - ctx.now_ms)).append(" ms");
    ReplyError(ctx, message);
    return;
  }
  bool wrong_type;
  Store::Ref ref = FindLock(ctx, key, &wrong_type);
  if (wrong_type) return;
  if (ref != nullptr) {
    LockValue held = ReadLock(ctx.store.Value(ref));
    if (held.owner != owner) {
      ctx.reply.Null();
      return;
    }
    ctx.store.SetExpireAt(ref, ctx.now_ms + ttl_ms);
    ctx.reply.Integer(static_cast<int64_t>(held.token));
    return;
  }
  uint64_t token = ++slot.fencing_token;
  char buf[128];
  std::string spill;
  ref = ctx.store.Insert(key, EncodeLock(token, owner, buf, sizeof(buf), &spill), ValueType::kLock);
  ctx.store.SetExpireAt(ref, ctx.now_ms + ttl_ms);
  ctx.reply.Integer(static_cast<int64_t>(token));
}

// UNLOCK key owner -> 1 if `owner` held the lock (now released), else 0.
void Unlock(CommandContext& ctx) {
  bool wrong_type;
  Store::Ref ref = FindLock(ctx, ctx.args[1], &wrong_type);
  if (wrong_type) return;
  if (ref == nullptr || ReadLock(ctx.store.Value(ref)).owner != ctx.args[2]) {
    ctx.reply.Integer(0);
    return;
  }
  ctx.store.Erase(ref);
  ctx.reply.Integer(1);
}

// LOCKEXTEND key owner ttl-ms -> 1 if `owner` holds the lock (its lease now ends ttl-ms from
// now), else 0. Never grants a lock, so the quarantine does not apply.
void LockExtend(CommandContext& ctx) {
  int64_t ttl_ms;
  if (!LockTtlOrReply(ctx, ctx.args[3], "lockextend", &ttl_ms)) return;
  bool wrong_type;
  Store::Ref ref = FindLock(ctx, ctx.args[1], &wrong_type);
  if (wrong_type) return;
  if (ref == nullptr || ReadLock(ctx.store.Value(ref)).owner != ctx.args[2]) {
    ctx.reply.Integer(0);
    return;
  }
  ctx.store.SetExpireAt(ref, ctx.now_ms + ttl_ms);
  ctx.reply.Integer(1);
}

// LOCKINFO key -> nil when unlocked, else owner, token and ttl_ms (a map in RESP3, a flat
// array of pairs in RESP2, as Redis answers maps).
void LockInfo(CommandContext& ctx) {
  bool wrong_type;
  Store::Ref ref = FindLock(ctx, ctx.args[1], &wrong_type);
  if (wrong_type) return;
  if (ref == nullptr) {
    ctx.reply.Null();
    return;
  }
  LockValue held = ReadLock(ctx.store.Value(ref));
  int64_t deadline = ctx.store.ExpireAt(ref);
  ctx.reply.MapHeader(3);
  ctx.reply.Bulk("owner");
  ctx.reply.Bulk(held.owner);
  ctx.reply.Bulk("token");
  ctx.reply.Integer(static_cast<int64_t>(held.token));
  ctx.reply.Bulk("ttl_ms");
  // A lock always has a lease; -1 only if something persisted it (PERSIST), as PTTL would say.
  ctx.reply.Integer(deadline == core::kNoExpiry ? -1 : deadline - ctx.now_ms);
}

constexpr CommandSpec kLockCommands[] = {
    {.name = "lock",
     .arity = 4,
     .flags = kWrite | kDenyOom | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Lock,
     .group = "generic",
     .summary = "Acquire a lock for ttl-ms milliseconds and return its fencing token (Keep)",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @fast",
     .syntax = "key owner ttl-ms"},
    {.name = "unlock",
     .arity = 3,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Unlock,
     .group = "generic",
     .summary = "Release a lock held by the given owner (Keep)",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @fast",
     .syntax = "key owner"},
    {.name = "lockextend",
     .arity = 4,
     .flags = kWrite | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = LockExtend,
     .group = "generic",
     .summary = "Renew the lease of a lock held by the given owner (Keep)",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@write @fast",
     .syntax = "key owner ttl-ms"},
    {.name = "lockinfo",
     .arity = 2,
     .flags = kReadOnly | kFast,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = LockInfo,
     .group = "generic",
     .summary = "Show a lock's owner, fencing token and remaining lease (Keep)",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@read @fast",
     .syntax = "key"},
};

}  // namespace

std::span<const CommandSpec> LockCommands() { return kLockCommands; }

}  // namespace keep::commands
