// The table of every command this server knows, looked up case-insensitively by name.
#pragma once

#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dataplane/commands/command.h"

namespace keep::commands {

class CommandTable {
 public:
  // The table with every command family registered.
  static const CommandTable& Default();

  void Add(std::span<const CommandSpec> specs);
  // nullptr when unknown. `name` may be in any case.
  const CommandSpec* Find(std::string_view name) const;
  const std::vector<const CommandSpec*>& all() const { return all_; }

 private:
  std::unordered_map<std::string, const CommandSpec*> by_name_;
  std::vector<const CommandSpec*> all_;
};

// Families, one file each.
std::span<const CommandSpec> StringCommands();
std::span<const CommandSpec> CounterCommands();
std::span<const CommandSpec> KeyCommands();
std::span<const CommandSpec> ConnectionCommands();
std::span<const CommandSpec> ServerCommands();
std::span<const CommandSpec> ScriptCommands();
std::span<const CommandSpec> LockCommands();
std::span<const CommandSpec> RateLimitCommands();
std::span<const CommandSpec> PubSubCommands();
std::span<const CommandSpec> ClusterCommands();

}  // namespace keep::commands
