#include "dataplane/shard/shard_group.h"

#include <charconv>
#include "dataplane/commands/command_table.h"
#include "dataplane/commands/glob_util.h"
#include "dataplane/commands/memory_guard.h"

namespace keep::shard {

namespace {

std::vector<std::string> CommandNames() {
  std::vector<std::string> names;
  for (const commands::CommandSpec* spec : commands::CommandTable::Default().all()) {
    names.emplace_back(spec->name);
  }
  return names;
}

std::vector<std::string> KeyClassNames(const std::vector<ShardOptions>& shard_options) {
  std::vector<std::string> names;
  if (shard_options.empty()) return names;
  const core::KeyClassTable& table = shard_options.front().key_classes;
  for (size_t c = 0; c < table.size(); ++c)
    names.emplace_back(table.NameOf(static_cast<uint8_t>(c)));
  if (names.empty()) names.emplace_back("default");
  return names;
}

}  // namespace

ShardGroup::ShardGroup(std::vector<ShardOptions> shard_options, core::SlotFunction slot_function,
                       commands::ServerFacts facts, std::map<std::string, std::string> config_view,
                       int64_t maxclients)
    : metrics_(CommandNames(), KeyClassNames(shard_options),
               static_cast<int>(shard_options.size())),
      prefaulter_(static_cast<int>(shard_options.size())),
      slot_function_(slot_function),
      facts_(std::move(facts)),
      maxclients_(maxclients),
      config_view_(std::move(config_view)) {
  int count = static_cast<int>(shard_options.size());
  shard_count_ = count;
  if (auto it = config_view_.find("timeout"); it != config_view_.end()) {
    timeout_seconds_ = std::stoll(it->second);
  }
  if (auto it = config_view_.find("maxmemory"); it != config_view_.end()) {
    maxmemory_ = std::stoll(it->second);
  }
  rings_.resize(static_cast<size_t>(count) * count);
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      if (from != to) {
        rings_[from * count + to] = std::make_unique<SpscRing<Envelope>>(kRingCapacity);
      }
    }
  }
  for (ShardOptions& options : shard_options) {
    shards_.push_back(std::make_unique<Shard>(this, std::move(options)));
  }
  tasks_ = std::make_unique<TaskChannel>(count, [this](int shard) { shards_[shard]->Wake(); });
}

ShardGroup::~ShardGroup() {
  RequestStop();
  Wait();
}

void ShardGroup::Start() {
  for (auto& shard : shards_) shard->Start();
}

void ShardGroup::RequestStop() {
  stop_requested_.store(true, std::memory_order_release);
  for (auto& shard : shards_) {
    // Wake unconditionally: a parked shard must see the request now, not at its next timer.
    shard->parked_.store(true);
    shard->Wake();
  }
}

void ShardGroup::Wait() {
  for (auto& shard : shards_) shard->Join();
}

bool ShardGroup::AdmitClient() {
  int64_t now = connected_clients_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (now > maxclients_.load(std::memory_order_relaxed)) {
    connected_clients_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void ShardGroup::ConfigGet(std::string_view pattern,
                           std::vector<std::pair<std::string, std::string>>* out) {
  std::lock_guard lock(config_mutex_);
  for (const auto& [name, value] : config_view_) {
    if (commands::StringMatch(pattern, name, true)) out->emplace_back(name, value);
  }
}

std::string ShardGroup::ConfigSet(std::string_view name, std::string_view value) {
  std::string lower;
  for (char c : name)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  auto failed = [&](std::string_view why) {
    return "ERR CONFIG SET failed (possibly related to argument '" + lower + "') - " +
           std::string(why);
  };
  std::lock_guard lock(config_mutex_);
  if (lower == "timeout" || lower == "maxclients") {
    int64_t parsed = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
      return failed("argument couldn't be parsed into an integer");
    }
    if (parsed < (lower == "maxclients" ? 1 : 0)) return failed("argument must be between");
    if (lower == "timeout")
      timeout_seconds_ = parsed;
    else
      maxclients_ = parsed;
    config_view_[lower] = std::to_string(parsed);
    return "";
  }
  if (lower == "maxmemory") {
    // Redis's units (CONFIG SET maxmemory 64mb), applied by every shard on its next turn.
    std::optional<int64_t> bytes = commands::ParseMemoryValue(value);
    if (!bytes || *bytes < 0) return failed("argument must be a memory value");
    maxmemory_ = *bytes;
    config_view_[lower] = std::to_string(*bytes);
    return "";
  }
  // Keep never persists: these are accepted only with the value that says so, which is what
  // tools that probe them (redis-benchmark, test suites) set.
  if (lower == "save" && value.empty()) return "";
  if (lower == "appendonly" && value == "no") return "";
  if (config_view_.count(lower)) return failed("this setting is fixed at startup");
  return "ERR Unknown option or number of arguments for CONFIG SET - '" + lower + "'";
}

}  // namespace keep::shard
