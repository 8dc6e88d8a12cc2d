#include "dataplane/commands/memory_guard.h"

#include <string>

#include "dataplane/commands/family_util.h"

namespace keep::commands {

std::optional<int64_t> ParseMemoryValue(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 18) return std::nullopt;
  int64_t number = 0;
  for (size_t i = 0; i < digits; ++i) number = number * 10 + (text[i] - '0');
  std::string unit;
  for (char c : text.substr(digits)) unit.push_back(static_cast<char>(c | 0x20));
  int64_t scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "k")
    scale = 1000;
  else if (unit == "kb")
    scale = 1024;
  else if (unit == "m")
    scale = 1000 * 1000;
  else if (unit == "mb")
    scale = 1024 * 1024;
  else if (unit == "g")
    scale = 1000 * 1000 * 1000;
  else if (unit == "gb")
    scale = int64_t{1} << 30;
  if (scale == 0 || number > INT64_MAX / scale) return std::nullopt;
  return number * scale;
}

bool AdmitWriteSlow(const CommandSpec& spec, CommandContext& ctx) {
  core::Store& store = ctx.store;
  if (!store.OverLimit()) return true;
  const core::KeyClassTable& classes = store.key_classes();
  // The class that decides: a key of a `none` class refuses the whole write, else the first key.
  uint8_t klass = core::KeyClassTable::kDefaultClass;
  if (spec.first_key > 0 && static_cast<size_t>(spec.first_key) < ctx.args.size()) {
    const size_t last =
        spec.last_key < 0 ? ctx.args.size() + spec.last_key : static_cast<size_t>(spec.last_key);
    const size_t step = spec.key_step > 0 ? static_cast<size_t>(spec.key_step) : 1;
    klass = classes.ClassOf(ctx.args[spec.first_key]);
    for (size_t i = spec.first_key; i <= last && i < ctx.args.size(); i += step) {
      const uint8_t c = classes.ClassOf(ctx.args[i]);
      if (classes.PolicyOf(c) == core::EvictionPolicy::kNone) {
        klass = c;
        break;
      }
    }
  }
  if (store.MakeRoom(klass, kEvictionsPerWrite)) return true;
  ReplyError(ctx, kOomError);
  return false;
}

}  // namespace keep::commands
