#include "dataplane/commands/plan.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace keep::commands {

namespace {

// Redis replaces newlines in error texts so the reply stays one line.
void AppendSanitized(std::string* out, std::string_view text) {
  for (char c : text) out->push_back(c == '\r' || c == '\n' ? ' ' : c);
}

bool ArityOk(int arity, size_t argc) {
  return arity > 0 ? argc == static_cast<size_t>(arity) : argc >= static_cast<size_t>(-arity);
}

size_t LastKeyIndex(const CommandSpec& spec, size_t argc) {
  return spec.last_key < 0 ? argc + spec.last_key : static_cast<size_t>(spec.last_key);
}

}  // namespace

std::string UnknownCommandError(std::span<const std::string_view> args) {
  std::string error = "ERR unknown command '";
  AppendSanitized(&error, args[0].substr(0, 128));
  error += "', with args beginning with: ";
  std::string listed;
  for (size_t i = 1; i < args.size() && listed.size() < 128; ++i) {
    size_t room = 128 - listed.size();
    listed += '\'';
    listed.append(args[i].substr(0, room));
    listed += "' ";
  }
  AppendSanitized(&error, listed);
  return error;
}

uint64_t NextScanCursor(uint64_t next_position, int shard, int shard_count) {
  if (next_position != 0) return EncodeScanCursor(next_position, shard, shard_count);
  if (shard + 1 < shard_count) return EncodeScanCursor(0, shard + 1, shard_count);
  return 0;
}

void PlanRequest(const CommandTable& table, std::span<const std::string_view> args,
                 const core::SlotFunction& slot_of, int shard_count, RoutePlan* plan,
                 uint32_t arg1_slot, bool want_slot) {
  plan->Reset();
  const CommandSpec* spec = table.Find(args[0]);
  if (spec == nullptr) {
    plan->error = UnknownCommandError(args);
    return;
  }
  plan->spec = spec;
  if (!ArityOk(spec->arity, args.size())) {
    plan->error = WrongArity(spec->name);
    return;
  }
  Routing routing = spec->route_of != nullptr ? spec->route_of(args) : spec->routing;
  plan->routing = routing;
  switch (routing) {
    case Routing::kLocal:
    case Routing::kAllShards:
      return;
    case Routing::kSingleKey: {
      size_t last = spec->key_count != nullptr ? spec->first_key + spec->key_count(args) - 1
                                               : LastKeyIndex(*spec, args.size());
      const auto second_key = static_cast<size_t>(spec->first_key + spec->key_step);
      const bool several_keys = second_key <= last && second_key < args.size();
      if (shard_count == 1 && !several_keys && !want_slot && arg1_slot == kNoSlot) {
        // One shard, one key, no cluster: nothing here depends on its slot.
        plan->slot = kNoSlot;
        plan->shard = 0;
        return;
      }
      uint32_t slot =
          spec->first_key == 1 && arg1_slot != kNoSlot ? arg1_slot : slot_of(args[spec->first_key]);
      for (size_t i = second_key; i <= last && i < args.size(); i += spec->key_step) {
        if (slot_of(args[i]) != slot) {
          plan->error = std::string(errors::kCrossSlot);
          return;
        }
      }
      plan->slot = slot;
      plan->shard = ShardOfSlot(slot, shard_count);
      return;
    }
    case Routing::kEachKey: {
      size_t last = LastKeyIndex(*spec, args.size());
      if (spec->key_step > 1 && (args.size() - spec->first_key) % spec->key_step != 0) {
        plan->error = WrongArity(spec->name);
        return;
      }
      for (size_t i = spec->first_key; i <= last && i < args.size(); i += spec->key_step) {
        uint32_t slot = slot_of(args[i]);
        plan->key_arg.push_back(static_cast<uint32_t>(i));
        plan->key_slot.push_back(slot);
        plan->key_shard.push_back(static_cast<uint16_t>(ShardOfSlot(slot, shard_count)));
      }
      return;
    }
    case Routing::kCursorShard: {
      // Redis parses cursors with strtoul: "" is 0, "+5" is 5, "-1" wraps; leading space,
      // trailing bytes and overflow are refused.
      std::string text(args[1]);
      char* end = nullptr;
      errno = 0;
      uint64_t cursor = std::strtoull(text.c_str(), &end, 10);
      if ((!text.empty() && std::isspace(static_cast<unsigned char>(text[0]))) || *end != '\0' ||
          errno == ERANGE) {
        plan->error = "ERR invalid cursor";
        return;
      }
      plan->shard = static_cast<int>(cursor % static_cast<uint64_t>(shard_count));
      plan->cursor_position = cursor / static_cast<uint64_t>(shard_count);
      return;
    }
  }
}

}  // namespace keep::commands
