// Helpers shared by the command families: errors that must land in the right place (the client
// or a part), per-key fragment bookkeeping for split commands, and the common combiners.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "dataplane/commands/command.h"

namespace keep::commands {

// Answers `message` (e.g. "ERR syntax error") as the command's error. In a part it replaces
// whatever the part wrote and marks it failed, so the combiner returns it as is.
void ReplyError(CommandContext& ctx, std::string_view message);

// "ERR invalid expire time in 'set' command", Redis's addReplyErrorExpireTime.
std::string InvalidExpireError(std::string_view command);

// kEachKey parts record where each key's reply fragment starts (then one final end offset), so
// the combiner can put fragments back in request order. Without a part (the whole command ran
// on one shard) there is nothing to record.
inline void MarkFragment(CommandContext& ctx) {
  if (ctx.part != nullptr) {
    ctx.part->offsets.push_back(static_cast<uint32_t>(ctx.reply.buffer()->size()));
  }
}

// Writes the first failed part's error; returns whether there was one.
bool ReplyFirstFailure(const CombineInput& input, proto::ReplyWriter& reply);

// The sum of every part's `integer` (DEL, EXISTS, DBSIZE, ...).
void CombineSum(const CombineInput& input, proto::ReplyWriter& reply);
// +OK once every part succeeded (MSET, FLUSHALL, ...).
void CombineOk(const CombineInput& input, proto::ReplyWriter& reply);
// An array of every key's fragment in request order (MGET).
void CombineKeyFragments(const CombineInput& input, proto::ReplyWriter& reply);

// Finds `key` for a command that reads or changes a string value. A key of another type (a lock)
// answers WRONGTYPE, as Redis does for every type mismatch, and sets *wrong_type.
core::Store::Ref FindString(CommandContext& ctx, std::string_view key, bool* wrong_type);

// "ERR unknown subcommand 'x'. Try CONFIG HELP.", as Redis words it for every container command.
std::string UnknownSubcommandError(std::string_view subcommand, std::string_view command);

// Redis's addReplyHelp: `lines`, then the closing "HELP" entry every help text shares.
void ReplyHelp(proto::ReplyWriter& reply, std::span<const std::string_view> lines);

// A fast per-thread pseudo-random number (RANDOMKEY); not for anything security related.
uint64_t RandomU64();

}  // namespace keep::commands
