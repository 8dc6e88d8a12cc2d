// An in-process fixture for command tests, in the style of Dragonfly's BaseFamilyTest: it runs a
// request against N simulated shards (each its own core::Store) exactly as the server routes it
// (PlanRequest, parts, combiners), under a settable fake clock, and returns the raw RESP reply,
// so tests assert the bytes a client would read without a socket.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/commands/command.h"
#include "dataplane/commands/command_table.h"
#include "dataplane/commands/plan.h"
#include "dataplane/core/slot.h"
#include "dataplane/core/store.h"

namespace keep::commands {

class CommandFixture : public ::testing::Test {
 protected:
  // 2023-11-14T22:13:20Z: a realistic Unix-ms clock, so relative and absolute times differ.
  static constexpr int64_t kStartMs = 1'700'000'000'000;

  // The table holds the string, counter and key families unless `families` says otherwise (the
  // fixture does not use CommandTable::Default, so it links without every family).
  explicit CommandFixture(int shard_count = 2,
                          std::vector<std::span<const CommandSpec>> families = {});

  // Runs one request as the fixture's client (RESP2 unless client().resp_version says
  // otherwise) and returns the reply bytes. An empty request answers nothing, as the server.
  std::string Run(std::vector<std::string> args);
  // Runs one request with the client on RESP3.
  std::string RunResp3(std::vector<std::string> args);

  void AdvanceTime(int64_t ms) { now_ms_ += ms; }
  void SetTime(int64_t now_ms) { now_ms_ = now_ms; }
  int64_t now_ms() const { return now_ms_; }
  // As if the wall clock had been stepped by `ms` since the shard clock was set.
  void SetWallDrift(int64_t ms) { wall_drift_ms_ = ms; }

  int shard_count() const { return static_cast<int>(stores_.size()); }
  int ShardOf(std::string_view key) const;
  // `count` distinct keys "<prefix><n>" that live on `shard`.
  std::vector<std::string> KeysOnShard(int shard, size_t count,
                                       std::string_view prefix = "key:") const;
  core::Store& store(int shard) { return *stores_[shard]; }
  core::SlotTable& slot_table(int shard) { return *slot_tables_[shard]; }
  ClientState& client() { return client_; }
  Limits& limits() { return limits_; }
  const CommandTable& table() const { return table_; }
  // The plan of the last request.
  const RoutePlan& last_plan() const { return plan_; }

  // When set, a split or broadcast command whose work lands on a single shard runs as one
  // handler call without a PartResult, writing the client's reply itself (a server may take
  // that shortcut; the handlers support it).
  void set_direct_single_part(bool direct) { direct_single_part_ = direct; }
  // The shard services every handler sees (ctx.services), e.g. a fake for server commands; null
  // by default.
  void set_services(ShardServices* services) { services_ = services; }
  // Cluster mode: the view every handler sees (ctx.view); null (a single node) by default.
  void set_view(const cluster::View* view) { view_ = view; }

 private:
  std::string Execute(const std::vector<std::string>& args, int resp_version);
  void RunHandler(const CommandSpec& spec, int shard, std::span<const std::string_view> args,
                  proto::ReplyWriter& reply, PartResult* part, ClientState* client);
  void RunEachKey(const CommandSpec& spec, std::span<const std::string_view> args, int resp_version,
                  proto::ReplyWriter& reply);
  void Combine(const CommandSpec& spec, std::vector<PartResult>& parts,
               std::span<const uint16_t> key_part, std::span<const uint32_t> key_pos,
               std::span<const std::string_view> args, int shard, proto::ReplyWriter& reply);

  CommandTable table_;
  core::SlotFunction slot_of_;
  std::vector<std::unique_ptr<core::Store>> stores_;
  std::vector<std::unique_ptr<core::SlotTable>> slot_tables_;
  ClientState client_;
  Limits limits_;
  RoutePlan plan_;
  ShardServices* services_ = nullptr;
  const cluster::View* view_ = nullptr;
  int64_t now_ms_ = kStartMs;
  int64_t wall_drift_ms_ = 0;
  bool direct_single_part_ = false;
};

// Expected replies, spelled as RESP bytes.
namespace resp {
inline constexpr std::string_view kOk = "+OK\r\n";
inline constexpr std::string_view kNil = "$-1\r\n";       // RESP2 null bulk
inline constexpr std::string_view kNull3 = "_\r\n";       // RESP3 null
inline constexpr std::string_view kEmpty = "$0\r\n\r\n";  // empty bulk
std::string Bulk(std::string_view bytes);
std::string Int(int64_t value);
std::string Err(std::string_view message);  // "-" + message + CRLF
std::string Simple(std::string_view text);
// An array of already-encoded elements.
std::string Array(std::initializer_list<std::string_view> elements);
std::string Array(const std::vector<std::string>& elements);
// An array of bulk strings.
std::string BulkArray(const std::vector<std::string>& values);
}  // namespace resp

}  // namespace keep::commands
