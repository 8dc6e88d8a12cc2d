// Routing of one request (design §2.4): which shard(s) run it, decided on the connection's shard
// before anything executes. Pure: the shard event loop and the in-process test fixture share it,
// so unit tests route exactly as the server does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/commands/command_table.h"
#include "dataplane/core/slot.h"

namespace keep::commands {

struct RoutePlan {
  const CommandSpec* spec = nullptr;
  Routing routing = Routing::kLocal;  // the spec's routing, or its route_of's answer
  std::string error;                  // non-empty: answer this error (without '-') and run nothing
  int shard = -1;                     // kSingleKey, kCursorShard: the shard that runs it
  uint32_t slot = 0;                  // kSingleKey: the slot of its keys (or kNoSlot, above)
  uint64_t cursor_position = 0;       // kCursorShard: the position within that shard
  // kEachKey: for each key in request order, its argument index and owning shard.
  std::vector<uint32_t> key_arg;
  std::vector<uint16_t> key_shard;
  std::vector<uint32_t> key_slot;  // kEachKey: each key's slot (cluster routing checks them)

  void Reset() {
    spec = nullptr;
    error.clear();
    shard = -1;
    cursor_position = 0;
    key_arg.clear();
    key_shard.clear();
    key_slot.clear();
  }
};

// Fills `plan` for `args` (args[0] is the command name). Checks existence, arity and that the
// keys of a kSingleKey command share one slot; errors use Redis's exact texts. `arg1_slot`, when
// not kNoSlot, is slot_of(args[1]) computed already (the shard does so to prefetch only its own
// keys). A kSingleKey request's slot is computed only when something depends on it: routing over
// several shards, the CROSSSLOT check of several keys, or `want_slot` (a cluster member checks
// that it serves the slot); otherwise plan->slot is kNoSlot (hashing the key for nothing was 7%
// of a pipelined GET's instructions on one shard).
inline constexpr uint32_t kNoSlot = UINT32_MAX;
void PlanRequest(const CommandTable& table, std::span<const std::string_view> args,
                 const core::SlotFunction& slot_of, int shard_count, RoutePlan* plan,
                 uint32_t arg1_slot = kNoSlot, bool want_slot = false);

// Every request asks this, some twice: a division took a visible share of a pipelined request's
// time on two shards, and shard counts are mostly powers of two.
inline int ShardOfSlot(uint32_t slot, int shard_count) {
  const auto count = static_cast<uint32_t>(shard_count);
  if ((count & (count - 1)) == 0) return static_cast<int>(slot & (count - 1));
  return static_cast<int>(slot % count);
}

// SCAN cursors carry the shard: cursor = position * shard_count + shard.
inline uint64_t EncodeScanCursor(uint64_t position, int shard, int shard_count) {
  return position * static_cast<uint64_t>(shard_count) + static_cast<uint64_t>(shard);
}
// The cursor to return after `shard` answered `next_position` (0 when that shard is done).
uint64_t NextScanCursor(uint64_t next_position, int shard, int shard_count);

// "ERR unknown command 'foo', with args beginning with: 'a' 'b' " as Redis 7 builds it.
std::string UnknownCommandError(std::span<const std::string_view> args);

}  // namespace keep::commands
