// CLUSTER commands (design §2.6, §3.6): INFO, MYID, NODES, SLOTS, SHARDS, KEYSLOT,
// COUNTKEYSINSLOT and HELP, in Redis 7.0's formats. Every *shard* of every member is advertised
// as a node at its shard port owning its slots (slot % shards of the member), so a cluster-aware
// client reaches the owning shard directly; a member without shard ports is one node at its
// client port. Node ids are derived from (member id, shard), so they survive restarts.
//
// CLUSTER COUNTKEYSINSLOT counts on demand: the owning shard walks its keys and hashes each
// (O(keys of that shard)). The store keeps no per-slot counter because every insert and erase
// would pay for it, while this command is rare (resharding tools); say so in the docs.
//
// On a single node (no --members) every subcommand answers Redis's "cluster support disabled".
#include <string>
#include <vector>

#include "dataplane/cluster/view.h"
#include "dataplane/commands/command_table.h"
#include "dataplane/commands/family_util.h"
#include "dataplane/commands/string_util.h"

namespace keep::commands {

namespace {

using cluster::View;
using cluster::ViewMember;

constexpr std::string_view kDisabled = "ERR This instance has cluster support disabled";

// One advertised node: endpoint `endpoint` of member `member`.
struct Node {
  size_t member;
  size_t endpoint;
};

int NodePort(const ViewMember& vm, size_t endpoint) {
  return vm.member.shard_port_base > 0 ? vm.member.shard_port_base + static_cast<int>(endpoint)
                                       : vm.member.client_port;
}

// Contiguous runs of slots served by one node, in slot order.
struct SlotRange {
  uint32_t start;
  uint32_t end;
  Node node;
};

std::vector<SlotRange> Ranges(const View& view) {
  std::vector<SlotRange> ranges;
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    uint16_t owner = view.owner[slot];
    if (owner == cluster::kNoOwner) continue;
    Node node{owner, view.members[owner].EndpointIndex(slot)};
    if (!ranges.empty() && ranges.back().end + 1 == slot && ranges.back().node.member == owner &&
        ranges.back().node.endpoint == node.endpoint) {
      ranges.back().end = slot;
    } else {
      ranges.push_back({slot, slot, node});
    }
  }
  return ranges;
}

size_t MyEndpoint(const View& view, int shard_index) {
  const ViewMember& self = view.members[view.self];
  return self.endpoints.size() == 1 ? 0 : static_cast<size_t>(shard_index) % self.endpoints.size();
}

void SubcommandArity(CommandContext& ctx) {
  std::string message = "ERR wrong number of arguments for 'cluster|";
  message.append(AsciiLower(ctx.args[1])).append("' command");
  ReplyError(ctx, message);
}

void Info(CommandContext& ctx, const View& view) {
  size_t assigned = 0;
  for (uint16_t owner : view.owner) assigned += owner != cluster::kNoOwner ? 1 : 0;
  size_t nodes = 0;
  size_t serving = 0;
  for (const ViewMember& vm : view.members) {
    nodes += vm.endpoints.size();
    if (vm.slots_owned > 0) serving += vm.endpoints.size();
  }
  bool ok = !view.fenced && assigned == core::kSlotCount;
  std::string text;
  auto line = [&](std::string_view name, std::string_view value) {
    text.append(name).append(":").append(value).append("\r\n");
  };
  line("cluster_state", ok ? "ok" : "fail");
  line("cluster_slots_assigned", std::to_string(assigned));
  line("cluster_slots_ok", std::to_string(view.fenced ? 0 : assigned));
  line("cluster_slots_pfail", "0");
  line("cluster_slots_fail", std::to_string(view.fenced ? assigned : 0));
  line("cluster_known_nodes", std::to_string(nodes));
  line("cluster_size", std::to_string(serving));
  line("cluster_current_epoch", std::to_string(view.epoch));
  line("cluster_my_epoch", std::to_string(view.epoch));
  line("cluster_stats_messages_sent", "0");
  line("cluster_stats_messages_received", "0");
  line("total_cluster_links_buffer_limit_exceeded", "0");
  ctx.reply.Verbatim("txt", text);
}

void Nodes(CommandContext& ctx, const View& view) {
  std::vector<SlotRange> ranges = Ranges(view);
  size_t mine = MyEndpoint(view, ctx.shard_index);
  std::string text;
  for (size_t m = 0; m < view.members.size(); ++m) {
    const ViewMember& vm = view.members[m];
    bool down = vm.state == cluster::MemberState::kDown;
    for (size_t e = 0; e < vm.endpoints.size(); ++e) {
      text.append(vm.node_ids[e]).append(" ").append(vm.member.host).append(":");
      text.append(std::to_string(NodePort(vm, e))).append("@");
      text.append(std::to_string(vm.member.peer_port));
      text.append(static_cast<int>(m) == view.self && e == mine ? " myself,master" : " master");
      if (down) text.append(",fail");
      text.append(" - 0 0 ").append(std::to_string(view.epoch));
      text.append(down ? " disconnected" : " connected");
      for (const SlotRange& r : ranges) {
        if (r.node.member != m || r.node.endpoint != e) continue;
        text.append(" ").append(std::to_string(r.start));
        if (r.end != r.start) text.append("-").append(std::to_string(r.end));
      }
      text += '\n';
    }
  }
  ctx.reply.Verbatim("txt", text);
}

void Slots(CommandContext& ctx, const View& view) {
  std::vector<SlotRange> ranges = Ranges(view);
  ctx.reply.ArrayHeader(ranges.size());
  for (const SlotRange& r : ranges) {
    const ViewMember& vm = view.members[r.node.member];
    ctx.reply.ArrayHeader(3);
    ctx.reply.Integer(r.start);
    ctx.reply.Integer(r.end);
    ctx.reply.ArrayHeader(4);
    ctx.reply.Bulk(vm.member.host);
    ctx.reply.Integer(NodePort(vm, r.node.endpoint));
    ctx.reply.Bulk(vm.node_ids[r.node.endpoint]);
    ctx.reply.MapHeader(0);
  }
}

void Shards(CommandContext& ctx, const View& view) {
  std::vector<SlotRange> ranges = Ranges(view);
  size_t nodes = 0;
  for (const ViewMember& vm : view.members) nodes += vm.endpoints.size();
  ctx.reply.ArrayHeader(nodes);
  for (size_t m = 0; m < view.members.size(); ++m) {
    const ViewMember& vm = view.members[m];
    bool down = vm.state == cluster::MemberState::kDown;
    for (size_t e = 0; e < vm.endpoints.size(); ++e) {
      ctx.reply.MapHeader(2);
      ctx.reply.Bulk("slots");
      size_t count = 0;
      for (const SlotRange& r : ranges) count += r.node.member == m && r.node.endpoint == e;
      ctx.reply.ArrayHeader(2 * count);
      for (const SlotRange& r : ranges) {
        if (r.node.member != m || r.node.endpoint != e) continue;
        ctx.reply.Integer(r.start);
        ctx.reply.Integer(r.end);
      }
      ctx.reply.Bulk("nodes");
      ctx.reply.ArrayHeader(1);
      ctx.reply.MapHeader(7);
      ctx.reply.Bulk("id");
      ctx.reply.Bulk(vm.node_ids[e]);
      ctx.reply.Bulk("port");
      ctx.reply.Integer(NodePort(vm, e));
      ctx.reply.Bulk("ip");
      ctx.reply.Bulk(vm.member.host);
      ctx.reply.Bulk("endpoint");
      ctx.reply.Bulk(vm.member.host);
      ctx.reply.Bulk("role");
      ctx.reply.Bulk("master");
      ctx.reply.Bulk("replication-offset");
      ctx.reply.Integer(0);
      ctx.reply.Bulk("health");
      ctx.reply.Bulk(down ? "failed" : "online");
    }
  }
}

// CLUSTER COUNTKEYSINSLOT slot: one part per shard; only the shard of the slot walks its keys.
void CountKeysInSlot(CommandContext& ctx) {
  int64_t slot = 0;
  if (!ParseInt64(ctx.args[2], &slot)) return ReplyError(ctx, errors::kNotInteger);
  if (slot < 0 || slot >= static_cast<int64_t>(core::kSlotCount)) {
    return ReplyError(ctx, "ERR Invalid slot");
  }
  int64_t count = 0;
  if (slot % ctx.shard_count == ctx.shard_index) {
    uint64_t cursor = 0;
    do {
      cursor = ctx.store.Scan(cursor, 1024, [&](std::string_view key, core::Store::Ref) {
        if ((*ctx.slot_of)(key) == static_cast<uint32_t>(slot)) ++count;
      });
    } while (cursor != 0);
  }
  ctx.part->integer = count;
}

void Cluster(CommandContext& ctx) {
  std::string_view sub = ctx.args[1];
  size_t argc = ctx.args.size();
  if (EqualsIgnoreCase(sub, "help")) {
    static constexpr std::string_view kHelp[] = {
        "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "COUNTKEYSINSLOT <slot>",
        "    Return the number of keys in <slot> (counted on demand by the owning shard).",
        "INFO",
        "    Return information about the cluster.",
        "KEYSLOT <key>",
        "    Return the hash slot for <key>.",
        "MYID",
        "    Return the node id of the shard serving this connection.",
        "NODES",
        "    Return cluster configuration seen by this member: every shard is a node.",
        "SHARDS",
        "    Return information about each shard and the slots it serves.",
        "SLOTS",
        "    Return the slot ranges and the endpoint (shard port) serving each.",
    };
    if (argc != 2) return SubcommandArity(ctx);
    return ReplyHelp(ctx.reply, kHelp);
  }
  if (ctx.view == nullptr) return ReplyError(ctx, kDisabled);
  const View& view = *ctx.view;
  if (EqualsIgnoreCase(sub, "countkeysinslot")) {
    if (argc != 3) return SubcommandArity(ctx);
    return CountKeysInSlot(ctx);
  }
  if (EqualsIgnoreCase(sub, "keyslot")) {
    if (argc != 3) return SubcommandArity(ctx);
    return ctx.reply.Integer((*ctx.slot_of)(ctx.args[2]));
  }
  if (EqualsIgnoreCase(sub, "info")) {
    if (argc != 2) return SubcommandArity(ctx);
    return Info(ctx, view);
  }
  if (EqualsIgnoreCase(sub, "myid")) {
    if (argc != 2) return SubcommandArity(ctx);
    return ctx.reply.Bulk(view.members[view.self].node_ids[MyEndpoint(view, ctx.shard_index)]);
  }
  if (EqualsIgnoreCase(sub, "nodes")) {
    if (argc != 2) return SubcommandArity(ctx);
    return Nodes(ctx, view);
  }
  if (EqualsIgnoreCase(sub, "slots")) {
    if (argc != 2) return SubcommandArity(ctx);
    return Slots(ctx, view);
  }
  if (EqualsIgnoreCase(sub, "shards")) {
    if (argc != 2) return SubcommandArity(ctx);
    return Shards(ctx, view);
  }
  ReplyError(ctx, UnknownSubcommandError(sub, "cluster"));
}

Routing ClusterRoute(std::span<const std::string_view> args) {
  return EqualsIgnoreCase(args[1], "countkeysinslot") && args.size() == 3 ? Routing::kAllShards
                                                                          : Routing::kLocal;
}

const CommandSpec kClusterCommands[] = {
    {.name = "cluster",
     .arity = -2,
     .flags = kStale,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Cluster,
     .combine = CombineSum,
     .group = "cluster",
     .summary = "A container for Redis Cluster commands",
     .since = "3.0.0",
     .complexity = "Depends on subcommand.",
     .acl_categories = "@slow",
     .route_of = ClusterRoute},
};

}  // namespace

std::span<const CommandSpec> ClusterCommands() { return kClusterCommands; }

}  // namespace keep::commands
