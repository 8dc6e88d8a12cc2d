// Connection commands: PING, ECHO, HELLO, AUTH, QUIT, RESET, SELECT, CLIENT.
#include <charconv>
#include <string>

#include "dataplane/commands/command_table.h"
#include "dataplane/commands/family_util.h"
#include "dataplane/commands/shard_services.h"
#include "dataplane/commands/string_util.h"

namespace keep::commands {

namespace {

constexpr std::string_view kWrongPass =
    "WRONGPASS invalid username-password pair or user is disabled.";

// Redis accepts client names of printable ASCII without spaces.
bool ValidClientName(std::string_view name) {
  for (unsigned char c : name) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

// Checks a password against the default user; on failure writes the error and returns false.
bool CheckPassword(CommandContext& ctx, std::string_view user, std::string_view password) {
  // Without requirepass the default user is "nopass": any password is accepted, as in Redis.
  const std::string& required = ctx.limits.requirepass;
  if (user != "default" || (!required.empty() && password != required)) {
    ctx.reply.Error(kWrongPass);
    return false;
  }
  ctx.client->authenticated = true;
  return true;
}

void Ping(CommandContext& ctx) {
  if (ctx.args.size() > 2) return ctx.reply.Error(WrongArity("ping"));
  if (ctx.client != nullptr && ctx.client->Subscribed() && ctx.reply.resp_version() == 2) {
    // Subscribed RESP2 connections get PING answers shaped like messages, as in Redis.
    ctx.reply.ArrayHeader(2);
    ctx.reply.Bulk("pong");
    return ctx.reply.Bulk(ctx.args.size() == 2 ? ctx.args[1] : "");
  }
  if (ctx.args.size() == 2) return ctx.reply.Bulk(ctx.args[1]);
  ctx.reply.Simple("PONG");
}

void Echo(CommandContext& ctx) { ctx.reply.Bulk(ctx.args[1]); }

void Hello(CommandContext& ctx) {
  ClientState& client = *ctx.client;
  int version = client.resp_version;
  size_t i = 1;
  if (ctx.args.size() >= 2) {
    int64_t requested = 0;
    if (!ParseInt64(ctx.args[1], &requested)) {
      return ctx.reply.Error("ERR Protocol version is not an integer or out of range");
    }
    if (requested < 2 || requested > 3) {
      return ctx.reply.Error("NOPROTO unsupported protocol version");
    }
    version = static_cast<int>(requested);
    i = 2;
  }
  std::string_view user, password, name;
  bool has_auth = false, has_name = false;
  for (; i < ctx.args.size(); ++i) {
    size_t more = ctx.args.size() - i - 1;
    if (EqualsIgnoreCase(ctx.args[i], "auth") && more >= 2) {
      user = ctx.args[i + 1];
      password = ctx.args[i + 2];
      has_auth = true;
      i += 2;
    } else if (EqualsIgnoreCase(ctx.args[i], "setname") && more >= 1) {
      name = ctx.args[i + 1];
      has_name = true;
      i += 1;
    } else {
      return ctx.reply.Error("ERR Syntax error in HELLO option '" + std::string(ctx.args[i]) + "'");
    }
  }
  if (has_auth) {
    if (!CheckPassword(ctx, user, password)) return;
  } else if (!client.authenticated) {
    return ctx.reply.Error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
        "<proto> AUTH <user> <pass> option can be used to authenticate the client and select "
        "the RESP protocol version at the same time");
  }
  if (has_name) {
    if (!ValidClientName(name)) {
      return ctx.reply.Error(
          "ERR Client names cannot contain spaces, newlines or special characters.");
    }
    client.name.assign(name);
  }
  client.resp_version = version;
  proto::ReplyWriter reply(ctx.reply.buffer(), version);
  reply.MapHeader(7);
  reply.Bulk("server");
  reply.Bulk("redis");
  reply.Bulk("version");
  reply.Bulk(kRedisCompatVersion);
  reply.Bulk("proto");
  reply.Integer(version);
  reply.Bulk("id");
  reply.Integer(static_cast<int64_t>(client.id));
  reply.Bulk("mode");
  reply.Bulk("standalone");
  reply.Bulk("role");
  reply.Bulk("master");
  reply.Bulk("modules");
  reply.ArrayHeader(0);
}

void Auth(CommandContext& ctx) {
  if (ctx.args.size() > 3) return ctx.reply.Error(errors::kSyntax);
  if (ctx.limits.requirepass.empty() && ctx.args.size() == 2) {
    return ctx.reply.Error(
        "ERR AUTH <password> called without any password configured for the default user. Are "
        "you sure your configuration is correct?");
  }
  std::string_view user = ctx.args.size() == 3 ? ctx.args[1] : "default";
  if (CheckPassword(ctx, user, ctx.args.back())) ctx.reply.Ok();
}

void Quit(CommandContext& ctx) {
  ctx.client->close_after_reply = true;
  ctx.reply.Ok();
}

void Reset(CommandContext& ctx) {
  ClientState& client = *ctx.client;
  for (int kind = 0; kind < 3; ++kind) {
    for (const std::string& name : client.subscriptions[kind]) {
      ctx.services->Unsubscribe(client, static_cast<PubSubKind>(kind), name);
    }
    client.subscriptions[kind].clear();
  }
  client.resp_version = 2;
  client.name.clear();
  client.db = 0;
  client.no_evict = false;
  client.authenticated = ctx.limits.requirepass.empty();
  proto::ReplyWriter(ctx.reply.buffer(), 2).Simple("RESET");
}

void Select(CommandContext& ctx) {
  int64_t index = 0;
  if (!ParseInt64(ctx.args[1], &index)) return ctx.reply.Error(errors::kNotInteger);
  if (index != 0) return ctx.reply.Error("ERR DB index is out of range");
  ctx.reply.Ok();
}

// --- CLIENT ---

struct ClientSubcommand {
  std::string_view name;
  int arity;
};

constexpr ClientSubcommand kClientSubcommands[] = {
    {"id", 2},    {"setname", 3},  {"getname", 2}, {"info", 2}, {"list", -2},
    {"kill", -3}, {"no-evict", 3}, {"setinfo", 4}, {"help", 2},
};

// Validates the subcommand and its arity; writes the error and returns false when wrong.
bool CheckSubcommand(CommandContext& ctx, std::string_view command,
                     std::span<const ClientSubcommand> table) {
  std::string sub = AsciiLower(ctx.args[1]);
  for (const ClientSubcommand& entry : table) {
    if (entry.name != sub) continue;
    size_t argc = ctx.args.size();
    bool ok = entry.arity > 0 ? argc == static_cast<size_t>(entry.arity)
                              : argc >= static_cast<size_t>(-entry.arity);
    if (!ok) {
      ReplyError(ctx, "ERR wrong number of arguments for '" + std::string(command) + "|" + sub +
                          "' command");
      return false;
    }
    return true;
  }
  ReplyError(ctx, UnknownSubcommandError(ctx.args[1], command));
  return false;
}

Routing ClientRoute(std::span<const std::string_view> args) {
  if (args.size() >= 2 &&
      (EqualsIgnoreCase(args[1], "list") || EqualsIgnoreCase(args[1], "kill"))) {
    return Routing::kAllShards;
  }
  return Routing::kLocal;
}

// Parses CLIENT LIST options: [TYPE normal|master|replica|pubsub] [ID id ...]. Returns an error
// text or "". `matches_type` is false when a TYPE excludes every client Keep has.
std::string ParseClientList(std::span<const std::string_view> args, std::vector<uint64_t>* ids,
                            bool* matches_type) {
  *matches_type = true;
  for (size_t i = 2; i < args.size(); ++i) {
    if (EqualsIgnoreCase(args[i], "type") && i + 1 < args.size()) {
      std::string type = AsciiLower(args[i + 1]);
      if (type != "normal" && type != "master" && type != "replica" && type != "slave" &&
          type != "pubsub") {
        return "ERR Unknown client type '" + std::string(args[i + 1]) + "'";
      }
      *matches_type = type == "normal";
      ++i;
    } else if (EqualsIgnoreCase(args[i], "id") && i + 1 < args.size()) {
      for (++i; i < args.size(); ++i) {
        int64_t id = 0;
        if (!ParseInt64(args[i], &id) || id <= 0) return "ERR Invalid client ID";
        ids->push_back(static_cast<uint64_t>(id));
      }
    } else {
      return std::string(errors::kSyntax);
    }
  }
  return "";
}

// Parses CLIENT KILL in its old (addr) or new (filters) form.
std::string ParseClientKill(std::span<const std::string_view> args, uint64_t caller_id,
                            ClientKillFilter* filter, bool* old_form) {
  filter->caller_id = caller_id;
  if (args.size() == 3) {
    *old_form = true;
    filter->addr.assign(args[2]);
    filter->skip_me = false;
    return "";
  }
  *old_form = false;
  if ((args.size() - 2) % 2 != 0) return std::string(errors::kSyntax);
  for (size_t i = 2; i < args.size(); i += 2) {
    std::string option = AsciiLower(args[i]);
    std::string_view value = args[i + 1];
    if (option == "id") {
      int64_t id = 0;
      if (!ParseInt64(value, &id) || id <= 0) {
        return "ERR client-id should be greater than 0";
      }
      filter->id = static_cast<uint64_t>(id);
      filter->has_id = true;
    } else if (option == "addr") {
      filter->addr.assign(value);
    } else if (option == "laddr") {
      filter->laddr.assign(value);
    } else if (option == "skipme") {
      if (EqualsIgnoreCase(value, "yes"))
        filter->skip_me = true;
      else if (EqualsIgnoreCase(value, "no"))
        filter->skip_me = false;
      else
        return std::string(errors::kSyntax);
    } else if (option == "type") {
      std::string type = AsciiLower(value);
      if (type != "normal" && type != "master" && type != "replica" && type != "slave" &&
          type != "pubsub") {
        return "ERR Unknown client type '" + std::string(value) + "'";
      }
      // Keep has only normal clients; other types match nobody.
      if (type != "normal") filter->has_id = true, filter->id = 0;
    } else if (option == "user") {
      if (value != "default") filter->has_id = true, filter->id = 0;
    } else if (option == "maxage") {
      int64_t age = 0;
      if (!ParseInt64(value, &age)) return std::string(errors::kNotInteger);
    } else {
      return std::string(errors::kSyntax);
    }
  }
  return "";
}

void Client(CommandContext& ctx) {
  if (!CheckSubcommand(ctx, "client", kClientSubcommands)) return;
  std::string sub = AsciiLower(ctx.args[1]);
  if (sub == "list") {  // a part on every shard
    std::vector<uint64_t> ids;
    bool matches_type = true;
    std::string error = ParseClientList(ctx.args, &ids, &matches_type);
    if (!error.empty()) {
      return ReplyError(ctx, error);
    }
    if (matches_type) ctx.services->AppendClientList(&ctx.part->resp, ids);
    return;
  }
  if (sub == "kill") {  // a part on every shard
    ClientKillFilter filter;
    bool old_form = false;
    std::string error = ParseClientKill(ctx.args, ctx.caller_id, &filter, &old_form);
    if (!error.empty()) {
      return ReplyError(ctx, error);
    }
    if (filter.has_id && filter.id == 0) return;
    ctx.part->integer = ctx.services->KillClients(filter);
    return;
  }
  ClientState& client = *ctx.client;
  if (sub == "id") return ctx.reply.Integer(static_cast<int64_t>(client.id));
  if (sub == "getname") {
    if (client.name.empty()) return ctx.reply.Null();
    return ctx.reply.Bulk(client.name);
  }
  if (sub == "setname") {
    if (!ValidClientName(ctx.args[2])) {
      return ctx.reply.Error(
          "ERR Client names cannot contain spaces, newlines or special characters.");
    }
    client.name.assign(ctx.args[2]);
    return ctx.reply.Ok();
  }
  if (sub == "info") {
    std::string line;
    ctx.services->AppendClientList(&line, {client.id});
    return ctx.reply.Verbatim("txt", line);
  }
  if (sub == "no-evict") {
    if (EqualsIgnoreCase(ctx.args[2], "on"))
      client.no_evict = true;
    else if (EqualsIgnoreCase(ctx.args[2], "off"))
      client.no_evict = false;
    else
      return ctx.reply.Error(errors::kSyntax);
    return ctx.reply.Ok();
  }
  if (sub == "setinfo") {
    std::string attribute = AsciiLower(ctx.args[2]);
    if (attribute != "lib-name" && attribute != "lib-ver") {
      return ctx.reply.Error("ERR Unrecognized option '" + std::string(ctx.args[2]) + "'");
    }
    return ctx.reply.Ok();
  }
  static constexpr std::string_view kHelp[] = {
      "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "GETNAME",
      "    Return the name of the current connection.",
      "ID",
      "    Return the ID of the current connection.",
      "INFO",
      "    Return information about the current client connection.",
      "KILL <ip:port>",
      "    Kill connection made from <ip:port>.",
      "KILL <option> <value> [<option> <value> [...]]",
      "    Kill connections. Options are: ID, TYPE, USER, ADDR, LADDR, SKIPME, MAXAGE.",
      "LIST [options ...]",
      "    Return information about client connections. Options: TYPE, ID.",
      "NO-EVICT (ON|OFF)",
      "    Protect current client connection from eviction.",
      "SETNAME <name>",
      "    Assign the name <name> to the current connection.",
      "SETINFO <LIB-NAME|LIB-VER> <value>",
      "    Accepted for client libraries that announce themselves.",
  };
  ReplyHelp(ctx.reply, kHelp);
}

void CombineClient(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  if (EqualsIgnoreCase(input.args[1], "list")) {
    std::string all;
    for (PartResult* part : input.parts) {
      if (part != nullptr) all += part->resp;
    }
    return reply.Verbatim("txt", all);
  }
  int64_t killed = 0;
  for (PartResult* part : input.parts) {
    if (part != nullptr) killed += part->integer;
  }
  if (input.args.size() == 3) {  // the old form answers OK or an error
    if (killed == 0) return reply.Error("ERR No such client");
    return reply.Ok();
  }
  reply.Integer(killed);
}

constexpr CommandSpec kConnectionCommands[] = {
    {.name = "ping",
     .arity = -1,
     .flags = kFast | kStale,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Ping,
     .group = "connection",
     .summary = "Ping the server",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@fast @connection",
     .syntax = "[message]"},
    {.name = "echo",
     .arity = 2,
     .flags = kFast | kStale,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Echo,
     .group = "connection",
     .summary = "Echo the given string",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@fast @connection",
     .syntax = "message"},
    {.name = "hello",
     .arity = -1,
     .flags = kFast | kStale | kNoAuth | kNoScript,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Hello,
     .group = "connection",
     .summary = "Handshake with Redis",
     .since = "6.0.0",
     .complexity = "O(1)",
     .acl_categories = "@fast @connection",
     .syntax = "[protover [AUTH username password] [SETNAME clientname]]"},
    {.name = "auth",
     .arity = -2,
     .flags = kFast | kStale | kNoAuth | kNoScript,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Auth,
     .group = "connection",
     .summary = "Authenticate to the server",
     .since = "1.0.0",
     .complexity = "O(N) where N is the number of passwords defined for the user",
     .acl_categories = "@fast @connection",
     .syntax = "[username] password"},
    {.name = "quit",
     .arity = -1,
     .flags = kFast | kStale | kNoAuth | kNoScript,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Quit,
     .group = "connection",
     .summary = "Close the connection",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@fast @connection"},
    {.name = "reset",
     .arity = 1,
     .flags = kFast | kStale | kNoAuth | kNoScript,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Reset,
     .group = "connection",
     .summary = "Reset the connection",
     .since = "6.2.0",
     .complexity = "O(1)",
     .acl_categories = "@fast @connection"},
    {.name = "select",
     .arity = 2,
     .flags = kFast | kStale | kLoading,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Select,
     .group = "connection",
     .summary = "Change the selected database for the current connection",
     .since = "1.0.0",
     .complexity = "O(1)",
     .acl_categories = "@fast @connection",
     .syntax = "index"},
    {.name = "client",
     .arity = -2,
     .flags = kStale | kNoScript,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Client,
     .combine = CombineClient,
     .group = "connection",
     .summary = "A container for client connection commands",
     .since = "2.4.0",
     .complexity = "Depends on subcommand.",
     .acl_categories = "@slow @connection",
     .route_of = ClientRoute},
};

}  // namespace

std::span<const CommandSpec> ConnectionCommands() { return kConnectionCommands; }

}  // namespace keep::commands
