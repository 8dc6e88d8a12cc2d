// The memory cap at the door of a write (design §2.5): before a command flagged denyoom runs on
// the shard that owns its keys, the shard's store makes room (evicting by the keys' classes) or
// the command is refused with Redis's OOM error. Reads, DEL and other writes that only shrink
// memory are never refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "dataplane/commands/command.h"

namespace keep::commands {

inline constexpr std::string_view kOomError =
    "OOM command not allowed when used memory > 'maxmemory'.";

// Keys evicted at most before one write; the shard's loop evicts the rest in bounded steps.
inline constexpr size_t kEvictionsPerWrite = 16;

// A memory value as Redis's CONFIG SET maxmemory takes it: digits and an optional unit, b, k
// (1000), kb (1024), m, mb, g, gb, any case.
std::optional<int64_t> ParseMemoryValue(std::string_view text);

bool AdmitWriteSlow(const CommandSpec& spec, CommandContext& ctx);

// True when the command may run; false when the OOM error was written as its reply.
inline bool AdmitWrite(const CommandSpec& spec, CommandContext& ctx) {
  if ((spec.flags & kDenyOom) == 0 || ctx.store.memory_limit() == 0) return true;
  return AdmitWriteSlow(spec, ctx);
}

}  // namespace keep::commands
