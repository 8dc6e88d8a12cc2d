#include "dataplane/commands/family_util.h"

#include "dataplane/commands/string_util.h"

#include <random>

namespace keep::commands {

void ReplyError(CommandContext& ctx, std::string_view message) {
  if (ctx.part != nullptr) {
    ctx.reply.buffer()->clear();
    ctx.part->offsets.clear();
    ctx.part->failed = true;
  }
  ctx.reply.Error(message);
}

std::string InvalidExpireError(std::string_view command) {
  std::string message = "ERR invalid expire time in '";
  message.append(command);
  message += "' command";
  return message;
}

bool ReplyFirstFailure(const CombineInput& input, proto::ReplyWriter& reply) {
  for (const PartResult* part : input.parts) {
    if (part->failed) {
      reply.Raw(part->resp);
      return true;
    }
  }
  return false;
}

void CombineSum(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  int64_t sum = 0;
  for (const PartResult* part : input.parts) sum += part->integer;
  reply.Integer(sum);
}

void CombineOk(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  reply.Ok();
}

void CombineKeyFragments(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  reply.ArrayHeader(input.key_part.size());
  for (size_t i = 0; i < input.key_part.size(); ++i) {
    const PartResult& part = *input.parts[input.key_part[i]];
    uint32_t pos = input.key_pos[i];
    uint32_t begin = part.offsets[pos];
    uint32_t end = part.offsets[pos + 1];
    reply.Raw(std::string_view(part.resp).substr(begin, end - begin));
  }
}

uint64_t RandomU64() {
  // xorshift64*, seeded once per thread.
  thread_local uint64_t state = [] {
    std::random_device device;
    uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ device();
    return seed == 0 ? 0x9e3779b97f4a7c15ull : seed;
  }();
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545f4914f6cdd1dull;
}

core::Store::Ref FindString(CommandContext& ctx, std::string_view key, bool* wrong_type) {
  core::Store::Ref ref = ctx.store.Find(key);
  *wrong_type = ref != nullptr && ctx.store.Type(ref) != core::ValueType::kString;
  if (*wrong_type) ReplyError(ctx, errors::kWrongType);
  return ref;
}

std::string UnknownSubcommandError(std::string_view subcommand, std::string_view command) {
  return "ERR unknown subcommand '" + std::string(subcommand.substr(0, 128)) + "'. Try " +
         AsciiUpper(command) + " HELP.";
}

void ReplyHelp(proto::ReplyWriter& reply, std::span<const std::string_view> lines) {
  reply.ArrayHeader(lines.size() + 2);
  for (std::string_view line : lines) reply.Simple(line);
  reply.Simple("HELP");
  reply.Simple("    Prints this help.");
}

}  // namespace keep::commands
