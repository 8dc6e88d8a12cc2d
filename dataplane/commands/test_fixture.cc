#include "dataplane/commands/test_fixture.h"

#include "dataplane/commands/memory_guard.h"

namespace keep::commands {

CommandFixture::CommandFixture(int shard_count, std::vector<std::span<const CommandSpec>> families)
    : slot_of_(core::SlotHash::kCrc16, "") {
  if (families.empty()) families = {StringCommands(), CounterCommands(), KeyCommands()};
  for (std::span<const CommandSpec> family : families) table_.Add(family);
  for (int i = 0; i < shard_count; ++i) {
    stores_.push_back(std::make_unique<core::Store>());
    slot_tables_.push_back(std::make_unique<core::SlotTable>());
  }
  client_.id = 1;
  client_.created_ms = now_ms_;
}

int CommandFixture::ShardOf(std::string_view key) const {
  return ShardOfSlot(slot_of_(key), shard_count());
}

std::vector<std::string> CommandFixture::KeysOnShard(int shard, size_t count,
                                                     std::string_view prefix) const {
  std::vector<std::string> keys;
  for (int n = 0; keys.size() < count; ++n) {
    std::string key(prefix);
    key.append(std::to_string(n));
    if (ShardOf(key) == shard) keys.push_back(std::move(key));
  }
  return keys;
}

std::string CommandFixture::Run(std::vector<std::string> args) {
  return Execute(args, client_.resp_version);
}

std::string CommandFixture::RunResp3(std::vector<std::string> args) {
  int saved = client_.resp_version;
  client_.resp_version = 3;
  std::string reply = Execute(args, 3);
  client_.resp_version = saved;
  return reply;
}

void CommandFixture::RunHandler(const CommandSpec& spec, int shard,
                                std::span<const std::string_view> args, proto::ReplyWriter& reply,
                                PartResult* part, ClientState* client) {
  CommandContext ctx{.store = *stores_[shard],
                     .now_ms = now_ms_,
                     .wall_drift_ms = wall_drift_ms_,
                     .args = args,
                     .reply = reply,
                     .limits = limits_,
                     .part = part,
                     .client = client,
                     .services = services_,
                     .shard_index = shard,
                     .shard_count = shard_count(),
                     .caller_id = client_.id,
                     .slot = plan_.slot,
                     .slots = slot_tables_[shard].get(),
                     .view = view_,
                     .slot_of = &slot_of_};
  if (AdmitWrite(spec, ctx)) spec.handler(ctx);
}

void CommandFixture::Combine(const CommandSpec& spec, std::vector<PartResult>& parts,
                             std::span<const uint16_t> key_part, std::span<const uint32_t> key_pos,
                             std::span<const std::string_view> args, int shard,
                             proto::ReplyWriter& reply) {
  EXPECT_NE(spec.combine, nullptr) << spec.name << " runs in parts but has no combiner";
  if (spec.combine == nullptr) return;
  std::vector<PartResult*> pointers;
  for (PartResult& part : parts) pointers.push_back(&part);
  CombineInput input{.parts = pointers,
                     .key_part = key_part,
                     .key_pos = key_pos,
                     .args = args,
                     .shard = shard,
                     .shard_count = shard_count()};
  spec.combine(input, reply);
}

void CommandFixture::RunEachKey(const CommandSpec& spec, std::span<const std::string_view> args,
                                int resp_version, proto::ReplyWriter& reply) {
  // As the shard loop does: one part per shard, in shard order, left empty (and not run) where
  // the shard owns none of the keys; a part gets the name, then its keys (with their values for
  // MSET-like commands) in request order. key_part is the owning shard.
  int shards = shard_count();
  std::vector<std::vector<std::string_view>> part_args(shards, {args[0]});
  std::vector<uint16_t> key_part(plan_.key_shard.begin(), plan_.key_shard.end());
  std::vector<uint32_t> key_pos;
  int step = spec.key_step;
  for (size_t i = 0; i < plan_.key_arg.size(); ++i) {
    std::vector<std::string_view>& own = part_args[plan_.key_shard[i]];
    key_pos.push_back(static_cast<uint32_t>((own.size() - 1) / step));
    for (int k = 0; k < step && plan_.key_arg[i] + k < args.size(); ++k) {
      own.push_back(args[plan_.key_arg[i] + k]);
    }
  }
  int used = 0;
  int last_used = 0;
  for (int shard = 0; shard < shards; ++shard) {
    if (part_args[shard].size() > 1) {
      ++used;
      last_used = shard;
    }
  }
  if (direct_single_part_ && used == 1) {
    RunHandler(spec, last_used, part_args[last_used], reply, nullptr, nullptr);
    return;
  }
  std::vector<PartResult> parts(shards);
  for (int shard = 0; shard < shards; ++shard) {
    if (part_args[shard].size() == 1) continue;
    proto::ReplyWriter writer(&parts[shard].resp, resp_version);
    RunHandler(spec, shard, part_args[shard], writer, &parts[shard], nullptr);
  }
  Combine(spec, parts, key_part, key_pos, args, 0, reply);
}

std::string CommandFixture::Execute(const std::vector<std::string>& args, int resp_version) {
  std::string out;
  if (args.empty()) return out;
  std::vector<std::string_view> views(args.begin(), args.end());
  proto::ReplyWriter reply(&out, resp_version);
  PlanRequest(table_, views, slot_of_, shard_count(), &plan_, kNoSlot, view_ != nullptr);
  if (!plan_.error.empty()) {
    reply.Error(plan_.error);
    return out;
  }
  for (auto& store : stores_) store->SetNow(now_ms_);
  const CommandSpec& spec = *plan_.spec;
  switch (plan_.routing) {
    case Routing::kLocal:
      RunHandler(spec, 0, views, reply, nullptr, &client_);
      break;
    case Routing::kSingleKey:
      RunHandler(spec, plan_.shard, views, reply, nullptr, nullptr);
      break;
    case Routing::kEachKey:
      RunEachKey(spec, views, resp_version, reply);
      break;
    case Routing::kAllShards: {
      if (direct_single_part_ && shard_count() == 1) {
        RunHandler(spec, 0, views, reply, nullptr, nullptr);
        break;
      }
      std::vector<PartResult> parts(shard_count());
      for (int shard = 0; shard < shard_count(); ++shard) {
        proto::ReplyWriter writer(&parts[shard].resp, resp_version);
        RunHandler(spec, shard, views, writer, &parts[shard], nullptr);
      }
      Combine(spec, parts, {}, {}, views, 0, reply);
      break;
    }
    case Routing::kCursorShard: {
      if (spec.combine == nullptr || direct_single_part_) {
        RunHandler(spec, plan_.shard, views, reply, nullptr, nullptr);
        break;
      }
      std::vector<PartResult> parts(1);
      parts[0].cursor = plan_.cursor_position;
      proto::ReplyWriter writer(&parts[0].resp, resp_version);
      RunHandler(spec, plan_.shard, views, writer, &parts[0], nullptr);
      Combine(spec, parts, {}, {}, views, plan_.shard, reply);
      break;
    }
  }
  return out;
}

namespace resp {

// Built with append: GCC 12 warns falsely (-Wrestrict) about chains of std::string operator+.
std::string Bulk(std::string_view bytes) {
  std::string out = "$";
  out.append(std::to_string(bytes.size())).append("\r\n").append(bytes).append("\r\n");
  return out;
}

std::string Int(int64_t value) {
  std::string out = ":";
  out.append(std::to_string(value)).append("\r\n");
  return out;
}

std::string Err(std::string_view message) {
  std::string out = "-";
  out.append(message).append("\r\n");
  return out;
}

std::string Simple(std::string_view text) {
  std::string out = "+";
  out.append(text).append("\r\n");
  return out;
}

std::string Array(std::initializer_list<std::string_view> elements) {
  std::string out = "*";
  out.append(std::to_string(elements.size())).append("\r\n");
  for (std::string_view element : elements) out.append(element);
  return out;
}

std::string Array(const std::vector<std::string>& elements) {
  std::string out = "*";
  out.append(std::to_string(elements.size())).append("\r\n");
  for (const std::string& element : elements) out.append(element);
  return out;
}

std::string BulkArray(const std::vector<std::string>& values) {
  std::string out = "*";
  out.append(std::to_string(values.size())).append("\r\n");
  for (const std::string& value : values) out.append(Bulk(value));
  return out;
}

}  // namespace resp

}  // namespace keep::commands
