// A ShardServices for unit tests: fixed facts and statistics, a recorded shutdown request, and a
// small configuration map, so server and connection commands run without a shard.
#pragma once

#include <map>

#include "dataplane/commands/glob_util.h"
#include "dataplane/commands/shard_services.h"

namespace keep::commands {

class FakeServices : public ShardServices {
 public:
  FakeServices() {
    facts_.run_id = std::string(40, 'a');
    facts_.version = "0.1.0";
    facts_.tcp_port = 7000;
    facts_.shard_count = 2;
    stats_.connected_clients = 3;
    stats_.total_commands_processed = 10;
  }

  void CollectStats(ShardStats* stats) override { *stats = stats_; }
  void AppendClientList(std::string* out, const std::vector<uint64_t>& ids) override {
    if (ids.empty() || ids[0] == 1) out->append("id=1 addr=127.0.0.1:5000 name=\n");
  }
  int KillClients(const ClientKillFilter& filter) override {
    last_kill = filter;
    return filter.addr == "127.0.0.1:5000" ? 1 : 0;
  }
  void RequestShutdown() override { shutdown_requested = true; }
  const ServerFacts& facts() override { return facts_; }
  void ConfigGet(std::string_view pattern,
                 std::vector<std::pair<std::string, std::string>>* out) override {
    for (const auto& [name, value] : config) {
      if (StringMatch(pattern, name, true)) out->emplace_back(name, value);
    }
  }
  std::string ConfigSet(std::string_view name, std::string_view value) override {
    if (name != "timeout")
      return "ERR Unknown option or number of arguments for CONFIG SET - '" + std::string(name) +
             "'";
    config["timeout"] = std::string(value);
    return "";
  }
  void ResetStats() override { ++resets; }
  bool OwnsKey(std::string_view) override { return true; }
  void Subscribe(const ClientState&, PubSubKind kind, std::string_view name) override {
    ++subscribers[{static_cast<int>(kind), std::string(name)}];
  }
  void Unsubscribe(const ClientState&, PubSubKind kind, std::string_view name) override {
    auto it = subscribers.find({static_cast<int>(kind), std::string(name)});
    if (it != subscribers.end() && --it->second == 0) subscribers.erase(it);
  }
  int64_t Publish(PubSubKind kind, std::string_view channel, std::string_view) override {
    auto it = subscribers.find({static_cast<int>(kind), std::string(channel)});
    return it == subscribers.end() ? 0 : it->second;
  }
  void ActiveSubscriptions(PubSubKind kind, std::vector<std::string>* out) override {
    for (const auto& [key, count] : subscribers) {
      if (key.first == static_cast<int>(kind)) out->push_back(key.second);
    }
  }
  int64_t SubscriberCount(PubSubKind kind, std::string_view name) override {
    auto it = subscribers.find({static_cast<int>(kind), std::string(name)});
    return it == subscribers.end() ? 0 : it->second;
  }

  std::map<std::pair<int, std::string>, int64_t> subscribers;

  ShardStats stats_;
  ServerFacts facts_;
  std::map<std::string, std::string> config = {{"timeout", "0"}, {"maxclients", "10000"}};
  ClientKillFilter last_kill;
  bool shutdown_requested = false;
  int resets = 0;
};

}  // namespace keep::commands
