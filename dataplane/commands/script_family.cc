// Scripting (design §2.6): EVAL, EVALSHA and SCRIPT LOAD/EXISTS/FLUSH/KILL/HELP with Redis 7.0's
// replies and errors (src/eval.c). A script's keys must share one slot (CROSSSLOT otherwise, as
// Redis Cluster): the plan routes EVAL to the shard owning them, where the script runs start to
// finish in one handler call, hence atomically. A script without keys runs on the connection's
// shard. Each shard thread has its own LuaEngine and script cache: SCRIPT LOAD and FLUSH run on
// every shard, EVAL caches its script only on the shard that ran it (EVALSHA elsewhere answers
// NOSCRIPT, which clients handle by sending EVAL or SCRIPT LOAD).
#include <string>
#include <vector>

#include "dataplane/commands/command_table.h"
#include "dataplane/commands/family_util.h"
#include "dataplane/commands/lua_engine.h"
#include "dataplane/commands/string_util.h"

namespace keep::commands {
namespace {

constexpr std::string_view kNoScriptError = "NOSCRIPT No matching script. Please use EVAL.";

// numkeys of EVAL/EVALSHA when valid (0 <= numkeys <= arguments after it), else -1.
int64_t ValidNumKeys(std::span<const std::string_view> args) {
  int64_t numkeys;
  if (!ParseInt64(args[2], &numkeys)) return -1;
  if (numkeys < 0 || numkeys > static_cast<int64_t>(args.size()) - 3) return -1;
  return numkeys;
}

// With keys the script runs where they live; without (or with a bad numkeys, which the handler
// then reports) it runs on the connection's shard.
Routing EvalRoute(std::span<const std::string_view> args) {
  return ValidNumKeys(args) > 0 ? Routing::kSingleKey : Routing::kLocal;
}

int EvalKeyCount(std::span<const std::string_view> args) {
  return static_cast<int>(ValidNumKeys(args));
}

// Redis's evalGenericCommand checks, in its order. Returns numkeys or -1 after an error reply.
int64_t NumKeysOrReply(CommandContext& ctx) {
  int64_t numkeys;
  if (!ParseInt64(ctx.args[2], &numkeys)) {
    ReplyError(ctx, errors::kNotInteger);
    return -1;
  }
  if (numkeys > static_cast<int64_t>(ctx.args.size()) - 3) {
    ReplyError(ctx, "ERR Number of keys can't be greater than number of args");
    return -1;
  }
  if (numkeys < 0) {
    ReplyError(ctx, "ERR Number of keys can't be negative");
    return -1;
  }
  return numkeys;
}

void RunScript(CommandContext& ctx, LuaEngine& engine, std::string_view sha, int64_t numkeys) {
  auto keys = ctx.args.subspan(3, static_cast<size_t>(numkeys));
  auto argv = ctx.args.subspan(3 + static_cast<size_t>(numkeys));
  engine.Run(ctx, sha, keys, argv, numkeys > 0);
}

// EVAL script numkeys [key ...] [arg ...]
void Eval(CommandContext& ctx) {
  int64_t numkeys = NumKeysOrReply(ctx);
  if (numkeys < 0) return;
  LuaEngine& engine = LuaEngine::ForThisThread();
  std::string sha, error;
  if (!engine.Load(ctx.args[1], &sha, &error)) {
    ReplyError(ctx, error);
    return;
  }
  RunScript(ctx, engine, sha, numkeys);
}

// EVALSHA sha1 numkeys [key ...] [arg ...]
void EvalSha(CommandContext& ctx) {
  int64_t numkeys = NumKeysOrReply(ctx);
  if (numkeys < 0) return;
  LuaEngine& engine = LuaEngine::ForThisThread();
  if (!engine.Exists(ctx.args[1])) {
    ReplyError(ctx, kNoScriptError);
    return;
  }
  RunScript(ctx, engine, ctx.args[1], numkeys);
}

constexpr std::string_view kScriptHelp[] = {
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
};

bool FlushOptionOk(std::span<const std::string_view> args) {
  return args.size() == 2 || EqualsIgnoreCase(args[2], "sync") ||
         EqualsIgnoreCase(args[2], "async");
}

// LOAD, EXISTS and FLUSH run on every shard (each has its own cache); the rest, and any
// malformed subcommand (answered with its error), on the connection's shard.
Routing ScriptRoute(std::span<const std::string_view> args) {
  std::string_view sub = args[1];
  if (EqualsIgnoreCase(sub, "load") && args.size() == 3) return Routing::kAllShards;
  if (EqualsIgnoreCase(sub, "exists") && args.size() >= 3) return Routing::kAllShards;
  if (EqualsIgnoreCase(sub, "flush") && args.size() <= 3 && FlushOptionOk(args)) {
    return Routing::kAllShards;
  }
  return Routing::kLocal;
}

std::string SubcommandArity(std::string_view sub) {
  std::string name = "script|";
  for (char c : sub) name.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  return WrongArity(name);
}

// SCRIPT LOAD|EXISTS|FLUSH|KILL|HELP. In a part (one per shard) LOAD leaves the sha (or the
// compile error), EXISTS one '0'/'1' byte per sha for the combiner, FLUSH nothing.
void Script(CommandContext& ctx) {
  std::string_view sub = ctx.args[1];
  size_t argc = ctx.args.size();
  if (EqualsIgnoreCase(sub, "load")) {
    if (argc != 3) {
      ReplyError(ctx, SubcommandArity(sub));
      return;
    }
    std::string sha, error;
    if (!LuaEngine::ForThisThread().Load(ctx.args[2], &sha, &error)) {
      ReplyError(ctx, error);
      return;
    }
    ctx.reply.Bulk(sha);
  } else if (EqualsIgnoreCase(sub, "exists")) {
    if (argc < 3) {
      ReplyError(ctx, SubcommandArity(sub));
      return;
    }
    LuaEngine& engine = LuaEngine::ForThisThread();
    if (ctx.part == nullptr) ctx.reply.ArrayHeader(argc - 2);
    for (size_t i = 2; i < argc; ++i) {
      bool exists = engine.Exists(ctx.args[i]);
      if (ctx.part != nullptr) {
        ctx.reply.Raw(exists ? "1" : "0");
      } else {
        ctx.reply.Integer(exists ? 1 : 0);
      }
    }
  } else if (EqualsIgnoreCase(sub, "flush")) {
    if (argc > 3) {
      ReplyError(ctx, SubcommandArity(sub));
      return;
    }
    if (!FlushOptionOk(ctx.args)) {
      ReplyError(ctx, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
      return;
    }
    // ASYNC too frees synchronously: a shard's cache is small and freeing it is quick.
    LuaEngine::ForThisThread().Flush();
    if (ctx.part == nullptr) ctx.reply.Ok();
  } else if (EqualsIgnoreCase(sub, "kill")) {
    if (argc != 2) {
      ReplyError(ctx, SubcommandArity(sub));
      return;
    }
    // A script runs within one handler call, so none is running while a command is parsed;
    // runaway scripts are stopped by lua-time-limit instead.
    ReplyError(ctx, "NOTBUSY No scripts in execution right now.");
  } else if (EqualsIgnoreCase(sub, "help") && argc == 2) {
    ReplyHelp(ctx.reply, kScriptHelp);
  } else {
    ReplyError(ctx, UnknownSubcommandError(sub, "script"));
  }
}

void CombineScript(const CombineInput& input, proto::ReplyWriter& reply) {
  if (ReplyFirstFailure(input, reply)) return;
  std::string_view sub = input.args[1];
  if (EqualsIgnoreCase(sub, "load")) {
    reply.Raw(input.parts[0]->resp);  // every shard compiled the same script
  } else if (EqualsIgnoreCase(sub, "exists")) {
    // 1 only where every shard has the script, so an EVALSHA finds it wherever its keys are.
    size_t count = input.args.size() - 2;
    reply.ArrayHeader(count);
    for (size_t i = 0; i < count; ++i) {
      bool all = true;
      for (const PartResult* part : input.parts)
        all = all && part->resp.size() > i && part->resp[i] == '1';
      reply.Integer(all ? 1 : 0);
    }
  } else {
    reply.Ok();
  }
}

constexpr CommandSpec kScriptCommands[] = {
    {.name = "eval",
     .arity = -3,
     .flags = kNoScript | kStale | kMayReplicate,
     .first_key = 3,
     .last_key = 3,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = Eval,
     .group = "scripting",
     .summary = "Execute a Lua script server side",
     .since = "2.6.0",
     .complexity = "Depends on the script that is executed.",
     .acl_categories = "@slow @scripting",
     .route_of = EvalRoute,
     .key_count = EvalKeyCount,
     .syntax = "script numkeys [key [key ...]] [arg [arg ...]]"},
    {.name = "evalsha",
     .arity = -3,
     .flags = kNoScript | kStale | kMayReplicate,
     .first_key = 3,
     .last_key = 3,
     .key_step = 1,
     .routing = Routing::kSingleKey,
     .handler = EvalSha,
     .group = "scripting",
     .summary = "Execute a Lua script server side",
     .since = "2.6.0",
     .complexity = "Depends on the script that is executed.",
     .acl_categories = "@slow @scripting",
     .route_of = EvalRoute,
     .key_count = EvalKeyCount,
     .syntax = "sha1 numkeys [key [key ...]] [arg [arg ...]]"},
    {.name = "script",
     .arity = -2,
     .flags = kNoScript,
     .first_key = 0,
     .last_key = 0,
     .key_step = 0,
     .routing = Routing::kLocal,
     .handler = Script,
     .combine = CombineScript,
     .group = "scripting",
     .summary = "A container for Lua scripts management commands",
     .since = "2.6.0",
     .complexity = "Depends on subcommand.",
     .acl_categories = "@slow",
     .route_of = ScriptRoute},
};

}  // namespace

std::span<const CommandSpec> ScriptCommands() { return kScriptCommands; }

}  // namespace keep::commands
