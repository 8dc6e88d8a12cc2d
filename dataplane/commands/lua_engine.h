// The Lua (LuaJIT, Lua 5.1 semantics) engine behind EVAL/EVALSHA/SCRIPT (design §2.6). One engine
// per shard thread: a script runs start to finish inside one handler call on the shard owning
// its keys, which is what makes it atomic. The sandbox, the redis.* API, the conversions between
// RESP and Lua values and the error texts follow Redis 7.0 (src/eval.c, src/script_lua.c).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>

#include "dataplane/commands/command.h"

struct lua_State;

namespace keep::commands {

// SHA-1 of `data` as 40 lower-case hex digits (script names, redis.sha1hex).
std::string Sha1Hex(std::string_view data);

class LuaEngine {
 public:
  LuaEngine();
  ~LuaEngine();
  LuaEngine(const LuaEngine&) = delete;
  LuaEngine& operator=(const LuaEngine&) = delete;

  // The engine of the calling (shard) thread, created on first use.
  static LuaEngine& ForThisThread();

  // Compiles `body` and caches it under its SHA-1 (written to `sha`). On a compile error returns
  // false with Redis's error text (without '-') in `error`.
  bool Load(std::string_view body, std::string* sha, std::string* error);
  // `sha` in any case.
  bool Exists(std::string_view sha) const;
  // Drops every cached script and starts from a fresh Lua state (Redis's SCRIPT FLUSH).
  void Flush();
  size_t script_count() const { return scripts_.size(); }

  // Runs the cached script `sha` (already known to exist) with KEYS and ARGV, writing its
  // reply (or error) into ctx.reply. `ctx` is the EVAL/EVALSHA context: commands called by the
  // script run on ctx.store. `slot_known` says whether ctx.slot is the slot of the script's
  // declared keys.
  void Run(CommandContext& ctx, std::string_view sha, std::span<const std::string_view> keys,
           std::span<const std::string_view> argv, bool slot_known);

 private:
  struct RunState;

  void Open();
  void Close();
  // redis.call and redis.pcall: runs the command whose arguments are on the Lua stack and
  // pushes its reply as a Lua value. Returns whether that value is an error table.
  bool Call(lua_State* lua);
  // Whether the running script may run `args` (of command `spec`, routed `routing`); on refusal
  // `error` holds the reason (without "ERR ").
  bool CheckKeys(const CommandSpec& spec, Routing routing, std::span<const std::string_view> args,
                 std::string_view* error);

  friend struct LuaGlue;  // the C functions Lua calls back

  lua_State* lua_ = nullptr;
  int error_handler_ref_ = -1;
  int scripts_ref_ = -1;  // registry table sha -> compiled function
  int env_ref_ = -1;      // the protected environment every script runs in
  std::unordered_set<std::string> scripts_;
  RunState* run_ = nullptr;  // set while a script runs
};

}  // namespace keep::commands
