// Pub/sub: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE, PUBLISH,
// SPUBLISH, PUBSUB. Subscriptions live on the subscriber's shard; a publish is a part on every
// shard, each delivering to its own subscribers, so a message reaches every subscriber of the
// member and the publisher learns how many received it (design §2.6).
#include <cstring>
#include <set>
#include <string>

#include "dataplane/commands/command_table.h"
#include "dataplane/commands/family_util.h"
#include "dataplane/commands/glob_util.h"
#include "dataplane/commands/shard_services.h"
#include "dataplane/commands/string_util.h"

namespace keep::commands {

namespace {

struct KindNames {
  std::string_view subscribe;
  std::string_view unsubscribe;
};

constexpr KindNames kNames[] = {
    {"subscribe", "unsubscribe"},
    {"psubscribe", "punsubscribe"},
    {"ssubscribe", "sunsubscribe"},
};

size_t CountFor(const ClientState& client, PubSubKind kind) {
  return kind == PubSubKind::kShardChannel ? client.subscriptions[2].size()
                                           : client.SubscriptionCount();
}

void Confirm(CommandContext& ctx, std::string_view verb, const std::string_view* name,
             size_t count) {
  ctx.reply.PushHeader(3);
  ctx.reply.Bulk(verb);
  if (name != nullptr)
    ctx.reply.Bulk(*name);
  else
    ctx.reply.Null();
  ctx.reply.Integer(static_cast<int64_t>(count));
}

void SubscribeAs(CommandContext& ctx, PubSubKind kind) {
  ClientState& client = *ctx.client;
  auto& names = client.subscriptions[static_cast<int>(kind)];
  for (size_t i = 1; i < ctx.args.size(); ++i) {
    std::string_view name = ctx.args[i];
    if (names.emplace(name).second) ctx.services->Subscribe(client, kind, name);
    Confirm(ctx, kNames[static_cast<int>(kind)].subscribe, &name, CountFor(client, kind));
  }
}

void UnsubscribeAs(CommandContext& ctx, PubSubKind kind) {
  ClientState& client = *ctx.client;
  auto& names = client.subscriptions[static_cast<int>(kind)];
  std::string_view verb = kNames[static_cast<int>(kind)].unsubscribe;
  if (ctx.args.size() == 1) {
    if (names.empty()) return Confirm(ctx, verb, nullptr, CountFor(client, kind));
    // Copy: each removal changes the set being walked.
    std::vector<std::string> all(names.begin(), names.end());
    for (const std::string& name : all) {
      names.erase(name);
      ctx.services->Unsubscribe(client, kind, name);
      std::string_view view = name;
      Confirm(ctx, verb, &view, CountFor(client, kind));
    }
    return;
  }
  for (size_t i = 1; i < ctx.args.size(); ++i) {
    std::string_view name = ctx.args[i];
    auto it = names.find(name);
    if (it != names.end()) {
      names.erase(it);
      ctx.services->Unsubscribe(client, kind, name);
    }
    Confirm(ctx, verb, &name, CountFor(client, kind));
  }
}

void Subscribe(CommandContext& ctx) { SubscribeAs(ctx, PubSubKind::kChannel); }
void Unsubscribe(CommandContext& ctx) { UnsubscribeAs(ctx, PubSubKind::kChannel); }
void PSubscribe(CommandContext& ctx) { SubscribeAs(ctx, PubSubKind::kPattern); }
void PUnsubscribe(CommandContext& ctx) { UnsubscribeAs(ctx, PubSubKind::kPattern); }
void SSubscribe(CommandContext& ctx) { SubscribeAs(ctx, PubSubKind::kShardChannel); }
void SUnsubscribe(CommandContext& ctx) { UnsubscribeAs(ctx, PubSubKind::kShardChannel); }

void Publish(CommandContext& ctx) {
  ctx.part->integer = ctx.services->Publish(PubSubKind::kChannel, ctx.args[1], ctx.args[2]);
}

void SPublish(CommandContext& ctx) {
  ctx.part->integer = ctx.services->Publish(PubSubKind::kShardChannel, ctx.args[1], ctx.args[2]);
}

// --- PUBSUB ---
// Parts carry names as (u32 length, bytes) records in `resp` and per-channel counts in
// `offsets`; only this file reads them.

void AppendName(std::string* out, std::string_view name) {
  uint32_t length = static_cast<uint32_t>(name.size());
  out->append(reinterpret_cast<const char*>(&length), sizeof(length));
  out->append(name);
}

void ReadNames(const std::string& in, std::set<std::string>* out) {
  size_t at = 0;
  while (at + sizeof(uint32_t) <= in.size()) {
    uint32_t length;
    std::memcpy(&length, in.data() + at, sizeof(length));
    at += sizeof(length);
    out->emplace(in.substr(at, length));
    at += length;
  }
}

struct PubSubSubcommand {
  std::string_view name;
  int arity;
};

constexpr PubSubSubcommand kPubSubSubcommands[] = {
    {"channels", -2},      {"numsub", -2},      {"numpat", 2},
    {"shardchannels", -2}, {"shardnumsub", -2}, {"help", 2},
};

void PubSub(CommandContext& ctx) {
  std::string sub = AsciiLower(ctx.args[1]);
  const PubSubSubcommand* found = nullptr;
  for (const PubSubSubcommand& entry : kPubSubSubcommands) {
    if (entry.name == sub) found = &entry;
  }
  size_t argc = ctx.args.size();
  if (found == nullptr) {
    return ReplyError(ctx, UnknownSubcommandError(ctx.args[1], "pubsub"));
  }
  bool arity_ok = found->arity > 0 ? argc == static_cast<size_t>(found->arity)
                                   : argc >= static_cast<size_t>(-found->arity);
  if (!arity_ok) {
    return ReplyError(ctx, "ERR wrong number of arguments for 'pubsub|" + sub + "' command");
  }
  // CHANNELS takes at most one pattern; Redis answers more with its generic subcommand error.
  if ((sub == "channels" || sub == "shardchannels") && argc > 3) {
    return ReplyError(ctx, "ERR unknown subcommand or wrong number of arguments for '" +
                               std::string(ctx.args[1].substr(0, 128)) + "'. Try PUBSUB HELP.");
  }
  if (sub == "channels" || sub == "shardchannels") {
    PubSubKind kind = sub == "channels" ? PubSubKind::kChannel : PubSubKind::kShardChannel;
    std::vector<std::string> names;
    ctx.services->ActiveSubscriptions(kind, &names);
    for (const std::string& name : names) {
      if (argc == 3 && !StringMatch(ctx.args[2], name)) continue;
      AppendName(&ctx.part->resp, name);
    }
    return;
  }
  if (sub == "numpat") {
    std::vector<std::string> names;
    ctx.services->ActiveSubscriptions(PubSubKind::kPattern, &names);
    for (const std::string& name : names) AppendName(&ctx.part->resp, name);
    return;
  }
  if (sub == "numsub" || sub == "shardnumsub") {
    PubSubKind kind = sub == "numsub" ? PubSubKind::kChannel : PubSubKind::kShardChannel;
    for (size_t i = 2; i < argc; ++i) {
      ctx.part->offsets.push_back(
          static_cast<uint32_t>(ctx.services->SubscriberCount(kind, ctx.args[i])));
    }
    return;
  }
  // HELP: answered by the combiner once.
}

void CombinePubSub(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  std::string sub = AsciiLower(input.args[1]);
  if (sub == "channels" || sub == "shardchannels" || sub == "numpat") {
    std::set<std::string> names;
    for (PartResult* part : input.parts) {
      if (part != nullptr) ReadNames(part->resp, &names);
    }
    if (sub == "numpat") return reply.Integer(static_cast<int64_t>(names.size()));
    reply.ArrayHeader(names.size());
    for (const std::string& name : names) reply.Bulk(name);
    return;
  }
  if (sub == "numsub" || sub == "shardnumsub") {
    size_t channels = input.args.size() - 2;
    reply.ArrayHeader(channels * 2);
    for (size_t i = 0; i < channels; ++i) {
      int64_t total = 0;
      for (PartResult* part : input.parts) {
        if (part != nullptr && i < part->offsets.size()) total += part->offsets[i];
      }
      reply.Bulk(input.args[2 + i]);
      reply.Integer(total);
    }
    return;
  }
  static constexpr std::string_view kHelp[] = {
      "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "CHANNELS [<pattern>]",
      "    Return the currently active channels matching a <pattern> (default: '*').",
      "NUMPAT",
      "    Return number of subscriptions to patterns.",
      "NUMSUB [<channel> ...]",
      "    Return the number of subscribers for the specified channels, excluding",
      "    pattern subscriptions(default: no channels).",
      "SHARDCHANNELS [<pattern>]",
      "    Return the currently active shard level channels matching a <pattern> (default: '*').",
      "SHARDNUMSUB [<shardchannel> ...]",
      "    Return the number of subscribers for the specified shard level channel(s)",
  };
  ReplyHelp(reply, kHelp);
}

constexpr uint32_t kSubscribeFlags = kPubSub | kNoScript | kLoading | kStale;

constexpr CommandSpec kPubSubCommands[] = {
    {.name = "subscribe",
     .arity = -2,
     .flags = kSubscribeFlags,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Subscribe,
     .group = "pubsub",
     .summary = "Listen for messages published to the given channels",
     .since = "2.0.0",
     .complexity = "O(N) where N is the number of channels to subscribe to.",
     .acl_categories = "@pubsub @slow",
     .syntax = "channel [channel ...]"},
    {.name = "unsubscribe",
     .arity = -1,
     .flags = kSubscribeFlags,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Unsubscribe,
     .group = "pubsub",
     .summary = "Stop listening for messages posted to the given channels",
     .since = "2.0.0",
     .complexity = "O(N) where N is the number of clients already subscribed to a channel.",
     .acl_categories = "@pubsub @slow",
     .syntax = "[channel [channel ...]]"},
    {.name = "psubscribe",
     .arity = -2,
     .flags = kSubscribeFlags,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = PSubscribe,
     .group = "pubsub",
     .summary = "Listen for messages published to channels matching the given patterns",
     .since = "2.0.0",
     .complexity = "O(N) where N is the number of patterns the client is "
                   "already subscribed to.",
     .acl_categories = "@pubsub @slow",
     .syntax = "pattern [pattern ...]"},
    {.name = "punsubscribe",
     .arity = -1,
     .flags = kSubscribeFlags,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = PUnsubscribe,
     .group = "pubsub",
     .summary = "Stop listening for messages posted to channels matching the given patterns",
     .since = "2.0.0",
     .complexity = "O(N+M) where N is the number of patterns the client is already subscribed "
                   "and M is the number of total patterns subscribed in the system (by any "
                   "client).",
     .acl_categories = "@pubsub @slow",
     .syntax = "[pattern [pattern ...]]"},
    {.name = "ssubscribe",
     .arity = -2,
     .flags = kSubscribeFlags,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = SSubscribe,
     .group = "pubsub",
     .summary = "Listen for messages published to the given shard channels",
     .since = "7.0.0",
     .complexity = "O(N) where N is the number of shard channels to subscribe to.",
     .acl_categories = "@pubsub @slow",
     .syntax = "shardchannel [shardchannel ...]"},
    {.name = "sunsubscribe",
     .arity = -1,
     .flags = kSubscribeFlags,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = SUnsubscribe,
     .group = "pubsub",
     .summary = "Stop listening for messages posted to the given shard channels",
     .since = "7.0.0",
     .complexity = "O(N) where N is the number of clients already subscribed to a shard channel.",
     .acl_categories = "@pubsub @slow",
     .syntax = "[shardchannel [shardchannel ...]]"},
    {.name = "publish",
     .arity = 3,
     .flags = kPubSub | kLoading | kStale | kFast | kMayReplicate,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kAllShards,
     .handler = Publish,
     .combine = CombineSum,
     .group = "pubsub",
     .summary = "Post a message to a channel",
     .since = "2.0.0",
     .complexity = "O(N+M) where N is the number of clients subscribed to the receiving channel "
                   "and M is the total number of subscribed patterns (by any client).",
     .acl_categories = "@pubsub @fast",
     .syntax = "channel message"},
    {.name = "spublish",
     .arity = 3,
     .flags = kPubSub | kLoading | kStale | kFast | kMayReplicate,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kAllShards,
     .handler = SPublish,
     .combine = CombineSum,
     .group = "pubsub",
     .summary = "Post a message to a shard channel",
     .since = "7.0.0",
     .complexity = "O(N) where N is the number of clients subscribed to the receiving shard "
                   "channel.",
     .acl_categories = "@pubsub @fast",
     .syntax = "shardchannel message"},
    {.name = "pubsub",
     .arity = -2,
     .flags = kPubSub | kLoading | kStale,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kAllShards,
     .handler = PubSub,
     .combine = CombinePubSub,
     .group = "pubsub",
     .summary = "A container for Pub/Sub commands",
     .since = "2.8.0",
     .complexity = "Depends on subcommand.",
     .acl_categories = "@slow"},
};

}  // namespace

std::span<const CommandSpec> PubSubCommands() { return kPubSubCommands; }

}  // namespace keep::commands
