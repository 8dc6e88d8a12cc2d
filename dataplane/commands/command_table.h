// The table of every command this server knows, looked up case-insensitively by name.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dataplane/commands/command.h"

namespace keep::commands {

class CommandTable {
 public:
  // The table with every command family registered.
  static const CommandTable& Default();

  // Holds copies of `specs`, each given the next id (its index in all()).
  void Add(std::span<const CommandSpec> specs);
  // nullptr when unknown. `name` may be in any case.
  const CommandSpec* Find(std::string_view name) const;
  const std::vector<const CommandSpec*>& all() const { return all_; }

 private:
  // Looked up with a lower-cased string_view: no std::string is built per request.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>()(name); }
  };
  std::unordered_map<std::string, const CommandSpec*, NameHash, std::equal_to<>> by_name_;
  // Unique per table for the life of the process, so Find's per-thread memory of the last spelling
  // never answers for another table (one built later at the same address, as tests do).
  uint64_t serial_ = NextSerial();
  static uint64_t NextSerial();
  std::vector<std::unique_ptr<CommandSpec>> owned_;
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
