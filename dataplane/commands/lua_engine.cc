#include "dataplane/commands/lua_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "dataplane/commands/command_table.h"
#include "dataplane/commands/shard_services.h"
#include "dataplane/core/slot.h"
#include "dataplane/proto/reply_writer.h"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <luajit.h>
#include <lualib.h>
}

namespace keep::commands {

// ------------------------------------------------------------------------------------------
// SHA-1 (FIPS 180-4). Scripts are named by it, so it must match Redis's bit for bit; a local
// implementation keeps the command library free of a crypto dependency.

namespace {

uint32_t Rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void Sha1Block(uint32_t h[5], const unsigned char* block) {
  uint32_t w[80];
  for (int i = 0; i < 16; ++i) {
    w[i] = (uint32_t{block[4 * i]} << 24) | (uint32_t{block[4 * i + 1]} << 16) |
           (uint32_t{block[4 * i + 2]} << 8) | uint32_t{block[4 * i + 3]};
  }
  for (int i = 16; i < 80; ++i) w[i] = Rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5A827999;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ED9EBA1;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8F1BBCDC;
    } else {
      f = b ^ c ^ d;
      k = 0xCA62C1D6;
    }
    uint32_t t = Rotl(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = Rotl(b, 30);
    b = a;
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

}  // namespace

std::string Sha1Hex(std::string_view data) {
  uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  size_t full = data.size() / 64 * 64;
  for (size_t i = 0; i < full; i += 64) {
    Sha1Block(h, reinterpret_cast<const unsigned char*>(data.data() + i));
  }
  unsigned char tail[128] = {};
  size_t rest = data.size() - full;
  std::memcpy(tail, data.data() + full, rest);
  tail[rest] = 0x80;
  size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = static_cast<uint64_t>(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  for (size_t i = 0; i < tail_len; i += 64) Sha1Block(h, tail + i);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(40, '0');
  for (int i = 0; i < 20; ++i) {
    unsigned char byte = static_cast<unsigned char>(h[i / 4] >> (24 - 8 * (i % 4)));
    out[2 * i] = kHex[byte >> 4];
    out[2 * i + 1] = kHex[byte & 15];
  }
  return out;
}

// ------------------------------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

// How often (in VM instructions) the time limit is checked: rare enough to cost nothing
// measurable, often enough to stop a runaway loop within a millisecond or so.
constexpr int kHookInstructions = 10000;

constexpr const char* kRegistryEngine = "keep.engine";

// Redis's error handler (eval.c): turns any error into a table {err, source, line}, with the
// position of the Lua code that raised it (the caller's when a C function raised it).
constexpr std::string_view kErrorHandler =
    "local dbg = debug\n"
    "debug = nil\n"
    "return function(err)\n"
    "  local i = dbg.getinfo(2,'nSl')\n"
    "  if i and i.what == 'C' then\n"
    "    i = dbg.getinfo(3,'nSl')\n"
    "  end\n"
    "  if type(err) ~= 'table' then\n"
    "    err = {err='ERR ' .. tostring(err)}\n"
    "  end\n"
    "  if i then\n"
    "    err['source'] = i.source\n"
    "    err['line'] = i.currentline\n"
    "  end\n"
    "  return err\n"
    "end\n";

std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Redis's luaPushErrorBuff: "-CODE message" (or "message", code ERR) becomes the table
// {err = "CODE message"}, without a trailing newline.
void PushErrorTable(lua_State* lua, std::string_view text) {
  std::string code = "ERR";
  std::string_view message = text;
  if (!text.empty() && text[0] == '-') {
    size_t space = text.find(' ');
    if (space == std::string_view::npos) {
      message = text.substr(1);
    } else {
      code.assign(text.substr(1, space - 1));
      message = text.substr(space + 1);
    }
  }
  while (!message.empty() && (message.front() == '\r' || message.front() == '\n')) {
    message.remove_prefix(1);
  }
  while (!message.empty() && (message.back() == '\r' || message.back() == '\n')) {
    message.remove_suffix(1);
  }
  std::string final_message = code;
  final_message.push_back(' ');
  final_message.append(message);
  lua_newtable(lua);
  lua_pushlstring(lua, final_message.data(), final_message.size());
  lua_setfield(lua, -2, "err");
}

// RESP (as written by a handler into a scratch buffer) to Lua, as Redis's
// redisProtocolToLuaType. Returns the position after the value.
size_t PushReply(lua_State* lua, std::string_view resp, size_t pos) {
  lua_checkstack(lua, 4);
  if (pos >= resp.size()) {
    lua_pushboolean(lua, 0);
    return pos;
  }
  size_t eol = resp.find("\r\n", pos);
  if (eol == std::string_view::npos) eol = resp.size();
  char type = resp[pos];
  std::string_view line = resp.substr(pos + 1, eol - pos - 1);
  size_t next = eol + 2;
  auto number = [&] { return std::strtoll(std::string(line).c_str(), nullptr, 10); };
  switch (type) {
    case ':':
      lua_pushnumber(lua, static_cast<lua_Number>(number()));
      return next;
    case '+':
      lua_newtable(lua);
      lua_pushlstring(lua, line.data(), line.size());
      lua_setfield(lua, -2, "ok");
      return next;
    case '-':
      PushErrorTable(lua, resp.substr(pos, eol - pos));
      return next;
    case '$': {
      long long len = number();
      if (len < 0) {
        lua_pushboolean(lua, 0);
        return next;
      }
      lua_pushlstring(lua, resp.data() + next, static_cast<size_t>(len));
      return next + static_cast<size_t>(len) + 2;
    }
    case '*': {
      long long count = number();
      if (count < 0) {
        lua_pushboolean(lua, 0);
        return next;
      }
      lua_newtable(lua);
      for (long long i = 0; i < count; ++i) {
        next = PushReply(lua, resp, next);
        lua_rawseti(lua, -2, static_cast<int>(i + 1));
      }
      return next;
    }
    case '_':
      lua_pushboolean(lua, 0);
      return next;
    case '#':
      lua_pushboolean(lua, line == "t");
      return next;
    case ',':
      lua_newtable(lua);
      lua_pushnumber(lua, std::strtod(std::string(line).c_str(), nullptr));
      lua_setfield(lua, -2, "double");
      return next;
    default:  // RESP3-only shapes never appear: commands run for a script answer RESP2
      lua_pushboolean(lua, 0);
      return resp.size();
  }
}

// Lua number to the integer Redis replies: a C cast, whose x86 result for NaN and out-of-range
// values (INT64_MIN) is reproduced without the undefined behaviour.
int64_t LuaNumberToInteger(lua_Number n) {
  if (!(n >= -9223372036854775808.0 && n < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(n);
}

// The string field `name` of the table at `index`, if it is a string.
bool StringField(lua_State* lua, int index, const char* name, std::string* out) {
  lua_getfield(lua, index, name);
  bool found = lua_type(lua, -1) == LUA_TSTRING || lua_type(lua, -1) == LUA_TNUMBER;
  if (found) {
    size_t len;
    const char* s = lua_tolstring(lua, -1, &len);
    out->assign(s, len);
  }
  lua_pop(lua, 1);
  return found;
}

// Lua to RESP, as Redis's luaReplyToRedisReply (RESP2 shapes). Consumes the top value.
void WriteReply(lua_State* lua, proto::ReplyWriter& reply) {
  if (!lua_checkstack(lua, 4)) {
    reply.Error("ERR reached lua stack limit");
    lua_pop(lua, 1);
    return;
  }
  switch (lua_type(lua, -1)) {
    case LUA_TSTRING: {
      size_t len;
      const char* s = lua_tolstring(lua, -1, &len);
      reply.Bulk(std::string_view(s, len));
      break;
    }
    case LUA_TBOOLEAN:
      if (lua_toboolean(lua, -1)) {
        reply.Integer(1);
      } else {
        reply.Null();
      }
      break;
    case LUA_TNUMBER:
      reply.Integer(LuaNumberToInteger(lua_tonumber(lua, -1)));
      break;
    case LUA_TTABLE: {
      std::string text;
      lua_pushstring(lua, "err");
      lua_rawget(lua, -2);
      bool is_error = lua_type(lua, -1) == LUA_TSTRING;
      lua_pop(lua, 1);
      if (is_error && StringField(lua, -1, "err", &text)) {
        reply.Error(text);
        break;
      }
      lua_pushstring(lua, "ok");
      lua_rawget(lua, -2);
      bool is_status = lua_type(lua, -1) == LUA_TSTRING;
      lua_pop(lua, 1);
      if (is_status && StringField(lua, -1, "ok", &text)) {
        reply.Simple(text);
        break;
      }
      lua_pushstring(lua, "double");
      lua_rawget(lua, -2);
      if (lua_type(lua, -1) == LUA_TNUMBER) {
        reply.Double(lua_tonumber(lua, -1));
        lua_pop(lua, 1);
        break;
      }
      lua_pop(lua, 1);
      // An array up to the first nil.
      size_t count = 0;
      for (;; ++count) {
        lua_rawgeti(lua, -1, static_cast<int>(count + 1));
        bool nil = lua_isnil(lua, -1);
        lua_pop(lua, 1);
        if (nil) break;
      }
      reply.ArrayHeader(count);
      for (size_t i = 0; i < count; ++i) {
        lua_rawgeti(lua, -1, static_cast<int>(i + 1));
        WriteReply(lua, reply);
      }
      break;
    }
    default:
      reply.Null();
  }
  lua_pop(lua, 1);
}

// ------------------------------------------------------------------------------------------
// cjson: Redis bundles lua-cjson; Debian's lua-cjson module is built for PUC Lua, so Keep
// provides cjson.encode/decode itself over nlohmann::json (number and error spellings may
// differ from lua-cjson's).

using Json = nlohmann::json;

constexpr int kJsonMaxDepth = 1000;

// Returns an error text, empty on success.
std::string LuaToJson(lua_State* lua, int index, int depth, Json* out) {
  if (depth > kJsonMaxDepth) return "Cannot serialise, excessive nesting (1001)";
  switch (lua_type(lua, index)) {
    case LUA_TNIL:
      *out = nullptr;
      return "";
    case LUA_TBOOLEAN:
      *out = lua_toboolean(lua, index) != 0;
      return "";
    case LUA_TNUMBER: {
      lua_Number n = lua_tonumber(lua, index);
      if (std::isnan(n) || std::isinf(n)) return "Cannot serialise number: must not be NaN or Inf";
      if (n == std::floor(n) && std::fabs(n) < 1e15) {
        *out = static_cast<int64_t>(n);
      } else {
        *out = n;
      }
      return "";
    }
    case LUA_TSTRING: {
      size_t len;
      const char* s = lua_tolstring(lua, index, &len);
      *out = std::string(s, len);
      return "";
    }
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(lua, index) == nullptr) {  // cjson.null
        *out = nullptr;
        return "";
      }
      return "Cannot serialise userdata: type not supported";
    case LUA_TTABLE: {
      if (index < 0) index = lua_gettop(lua) + index + 1;
      lua_checkstack(lua, 3);
      // An array when every key is a positive integer (lua-cjson's rule, without its
      // sparse-array ratio); an empty table is an object.
      size_t max_index = 0;
      size_t items = 0;
      bool array = true;
      lua_pushnil(lua);
      while (lua_next(lua, index) != 0) {
        ++items;
        if (lua_type(lua, -2) == LUA_TNUMBER) {
          lua_Number k = lua_tonumber(lua, -2);
          if (k >= 1 && k == std::floor(k)) {
            max_index = std::max(max_index, static_cast<size_t>(k));
          } else {
            array = false;
          }
        } else {
          array = false;
        }
        lua_pop(lua, 1);
      }
      if (array && items > 0) {
        *out = Json::array();
        for (size_t i = 1; i <= max_index; ++i) {
          lua_rawgeti(lua, index, static_cast<int>(i));
          Json element;
          std::string error = LuaToJson(lua, -1, depth + 1, &element);
          lua_pop(lua, 1);
          if (!error.empty()) return error;
          out->push_back(std::move(element));
        }
        return "";
      }
      *out = Json::object();
      lua_pushnil(lua);
      while (lua_next(lua, index) != 0) {
        int key_type = lua_type(lua, -2);
        if (key_type != LUA_TSTRING && key_type != LUA_TNUMBER) {
          lua_pop(lua, 2);
          return "Cannot serialise table: table key must be a number or string";
        }
        lua_pushvalue(lua, -2);  // lua_tolstring would change a number key in place
        size_t len;
        const char* k = lua_tolstring(lua, -1, &len);
        std::string key(k, len);
        lua_pop(lua, 1);
        Json element;
        std::string error = LuaToJson(lua, -1, depth + 1, &element);
        lua_pop(lua, 1);
        if (!error.empty()) {
          lua_pop(lua, 1);
          return error;
        }
        (*out)[key] = std::move(element);
      }
      return "";
    }
    default:
      return std::string("Cannot serialise ") + lua_typename(lua, lua_type(lua, index)) +
             ": type not supported";
  }
}

void PushJson(lua_State* lua, const Json& value) {
  lua_checkstack(lua, 3);
  switch (value.type()) {
    case Json::value_t::null:
      lua_pushlightuserdata(lua, nullptr);
      break;
    case Json::value_t::boolean:
      lua_pushboolean(lua, value.get<bool>() ? 1 : 0);
      break;
    case Json::value_t::number_integer:
      lua_pushnumber(lua, static_cast<lua_Number>(value.get<int64_t>()));
      break;
    case Json::value_t::number_unsigned:
      lua_pushnumber(lua, static_cast<lua_Number>(value.get<uint64_t>()));
      break;
    case Json::value_t::number_float:
      lua_pushnumber(lua, value.get<double>());
      break;
    case Json::value_t::string: {
      const std::string& s = value.get_ref<const std::string&>();
      lua_pushlstring(lua, s.data(), s.size());
      break;
    }
    case Json::value_t::array: {
      lua_newtable(lua);
      int i = 1;
      for (const Json& element : value) {
        PushJson(lua, element);
        lua_rawseti(lua, -2, i++);
      }
      break;
    }
    case Json::value_t::object:
      lua_newtable(lua);
      for (const auto& [key, element] : value.items()) {
        lua_pushlstring(lua, key.data(), key.size());
        PushJson(lua, element);
        lua_rawset(lua, -3);
      }
      break;
    default:
      lua_pushnil(lua);
  }
}

}  // namespace

// The C functions Lua calls. They keep no C++ object alive across a Lua error (lua_error and
// luaL_error unwind past them), so every error text is built first and raised last.
struct LuaGlue {
  static LuaEngine* Engine(lua_State* lua) {
    return static_cast<LuaEngine*>(lua_touserdata(lua, lua_upvalueindex(1)));
  }

  static int RedisCall(lua_State* lua) {
    if (Engine(lua)->Call(lua)) return lua_error(lua);
    return 1;
  }
  static int RedisPcall(lua_State* lua) {
    Engine(lua)->Call(lua);
    return 1;
  }

  // Redis's luaRedisPcall: pcall whose caught error is the message of an error table; and a
  // killed script stays killed even when it catches the error.
  static int Pcall(lua_State* lua) {
    luaL_checkany(lua, 1);
    int argc = lua_gettop(lua);
    lua_pushboolean(lua, 1);
    lua_insert(lua, 1);
    if (lua_pcall(lua, argc - 1, LUA_MULTRET, 0) != 0) {
      LuaEngine* engine = Engine(lua);
      if (engine->run_ != nullptr && KilledRun(engine)) return lua_error(lua);
      lua_remove(lua, 1);
      if (lua_istable(lua, -1)) {
        lua_getfield(lua, -1, "err");
        if (lua_isstring(lua, -1)) {
          lua_replace(lua, -2);
        } else {
          lua_pop(lua, 1);
        }
      }
      lua_pushboolean(lua, 0);
      lua_insert(lua, 1);
    }
    return lua_gettop(lua);
  }

  static bool KilledRun(LuaEngine* engine);

  static int Sha1(lua_State* lua) {
    if (lua_gettop(lua) != 1) {
      PushErrorTable(lua, "wrong number of arguments");
      return lua_error(lua);
    }
    size_t len;
    const char* s = lua_tolstring(lua, 1, &len);
    char digest[41];
    std::memcpy(digest, Sha1Hex(std::string_view(s != nullptr ? s : "", len)).c_str(), 41);
    lua_pushstring(lua, digest);
    return 1;
  }

  static int ErrorReply(lua_State* lua) {
    if (lua_gettop(lua) != 1 || lua_type(lua, -1) != LUA_TSTRING) {
      PushErrorTable(lua, "wrong number or type of arguments");
      return 1;
    }
    size_t len;
    const char* s = lua_tolstring(lua, -1, &len);
    std::string text = s[0] == '-' ? std::string(s, len) : "-" + std::string(s, len);
    PushErrorTable(lua, text);
    return 1;
  }

  static int StatusReply(lua_State* lua) {
    if (lua_gettop(lua) != 1 || lua_type(lua, -1) != LUA_TSTRING) {
      PushErrorTable(lua, "wrong number or type of arguments");
      return 1;
    }
    lua_newtable(lua);
    lua_pushvalue(lua, -2);
    lua_setfield(lua, -2, "ok");
    return 1;
  }

  // redis.log(level, ...): to stderr (Keep has no Redis-style log file), warnings only by
  // default as Redis's verbosity "notice" would print notice and warning.
  static int Log(lua_State* lua) {
    int argc = lua_gettop(lua);
    if (argc < 2) {
      PushErrorTable(lua, "redis.log() requires two arguments or more.");
      return lua_error(lua);
    }
    if (!lua_isnumber(lua, 1)) {
      PushErrorTable(lua, "First argument must be a number (log level).");
      return lua_error(lua);
    }
    int level = static_cast<int>(lua_tonumber(lua, 1));
    if (level < 0 || level > 3) {
      PushErrorTable(lua, "Invalid debug level.");
      return lua_error(lua);
    }
    if (level < 2) return 0;
    std::string line = "lua: ";
    for (int i = 2; i <= argc; ++i) {
      size_t len;
      const char* s = lua_tolstring(lua, i, &len);
      if (s == nullptr) continue;
      if (i != 2) line.push_back(' ');
      line.append(s, len);
    }
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
    return 0;
  }

  static int ReturnTrue(lua_State* lua) {
    lua_pushboolean(lua, 1);
    return 1;
  }
  static int Nothing(lua_State*) { return 0; }

  // Reading a global that does not exist is an error in Redis's sandbox.
  static int MissingGlobal(lua_State* lua) {
    const char* name = lua_tostring(lua, 2);
    return luaL_error(lua, "Script attempted to access nonexistent global variable '%s'",
                      name != nullptr ? name : "?");
  }
  static int ReadOnly(lua_State* lua) {
    return luaL_error(lua, "Attempt to modify a readonly table");
  }

  static int JsonEncode(lua_State* lua) {
    if (lua_gettop(lua) != 1) return luaL_argerror(lua, 1, "expected 1 argument");
    char error[256] = {};
    {
      Json value;
      std::string failure = LuaToJson(lua, 1, 0, &value);
      if (failure.empty()) {
        std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
        lua_pushlstring(lua, text.data(), text.size());
        return 1;
      }
      std::snprintf(error, sizeof(error), "%s", failure.c_str());
    }
    return luaL_error(lua, "%s", error);
  }

  static int JsonDecode(lua_State* lua) {
    size_t len;
    const char* s = luaL_checklstring(lua, 1, &len);
    char error[256] = {};
    {
      Json value = Json::parse(s, s + len, nullptr, false);
      if (!value.is_discarded()) {
        PushJson(lua, value);
        return 1;
      }
      std::snprintf(error, sizeof(error), "Expected value but found invalid token");
    }
    return luaL_error(lua, "%s", error);
  }

  static void Hook(lua_State* lua, lua_Debug*);
};

struct LuaEngine::RunState {
  CommandContext* ctx = nullptr;
  bool slot_known = false;
  // Slots of the keys the script may touch: those of its declared keys, or, for a script
  // without keys, that of the first key it touched (see CheckKeys). Where a context carries no
  // slot function (unit fixtures), hash tags stand in for slots.
  std::vector<uint32_t> slots;
  std::vector<std::string> tags;
  Clock::time_point deadline;
  bool has_deadline = false;
  bool killed = false;
  int64_t limit_ms = 0;
};

bool LuaGlue::KilledRun(LuaEngine* engine) { return engine->run_->killed; }

void LuaGlue::Hook(lua_State* lua, lua_Debug* ar) {
  // The error handler must run to completion to report the abort.
  if (lua_getinfo(lua, "S", ar) != 0 && std::strcmp(ar->source, "@error_handler") == 0) return;
  lua_getfield(lua, LUA_REGISTRYINDEX, kRegistryEngine);
  auto* engine = static_cast<LuaEngine*>(lua_touserdata(lua, -1));
  lua_pop(lua, 1);
  LuaEngine::RunState* run = engine != nullptr ? engine->run_ : nullptr;
  if (run == nullptr || !run->has_deadline) return;
  if (!run->killed && Clock::now() < run->deadline) return;
  if (!run->killed) {
    run->killed = true;
    // From now on every instruction raises again, so a pcall cannot swallow the abort.
    lua_sethook(lua, &LuaGlue::Hook, LUA_MASKCOUNT | LUA_MASKLINE, 1);
  }
  char message[160];
  std::snprintf(message, sizeof(message),
                "ERR Script killed by timeout: it ran longer than lua-time-limit (%lld ms)",
                static_cast<long long>(run->limit_ms));
  lua_newtable(lua);
  lua_pushstring(lua, message);
  lua_setfield(lua, -2, "err");
  lua_error(lua);
}

LuaEngine::LuaEngine() { Open(); }

LuaEngine::~LuaEngine() { Close(); }

LuaEngine& LuaEngine::ForThisThread() {
  thread_local std::unique_ptr<LuaEngine> engine;
  if (engine == nullptr) engine = std::make_unique<LuaEngine>();
  return *engine;
}

void LuaEngine::Close() {
  if (lua_ != nullptr) lua_close(lua_);
  lua_ = nullptr;
  scripts_.clear();
}

void LuaEngine::Flush() {
  Close();
  Open();
}

namespace {

void SetFunction(lua_State* lua, const char* name, lua_CFunction fn, void* engine) {
  lua_pushlightuserdata(lua, engine);
  lua_pushcclosure(lua, fn, 1);
  lua_setfield(lua, -2, name);
}

void SetNumber(lua_State* lua, const char* name, double value) {
  lua_pushnumber(lua, value);
  lua_setfield(lua, -2, name);
}

void OpenLibrary(lua_State* lua, const char* name, lua_CFunction open) {
  lua_pushcfunction(lua, open);
  lua_pushstring(lua, name);
  lua_call(lua, 1, 0);
}

}  // namespace

void LuaEngine::Open() {
  lua_ = luaL_newstate();
  lua_State* lua = lua_;
  // The time limit relies on count hooks, which compiled traces never call: scripts run in
  // LuaJIT's interpreter (still faster than PUC Lua's).
  luaJIT_setmode(lua, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);

  // Redis's set: base, table, string, math, debug (only for the error handler), cjson, bit.
  // No io, os, package (require), jit or ffi.
  OpenLibrary(lua, "", luaopen_base);
  OpenLibrary(lua, LUA_TABLIBNAME, luaopen_table);
  OpenLibrary(lua, LUA_STRLIBNAME, luaopen_string);
  OpenLibrary(lua, LUA_MATHLIBNAME, luaopen_math);
  OpenLibrary(lua, LUA_BITLIBNAME, luaopen_bit);
  OpenLibrary(lua, LUA_DBLIBNAME, luaopen_debug);
  for (const char* name : {"dofile", "loadfile", "print"}) {
    lua_pushnil(lua);
    lua_setglobal(lua, name);
  }

  lua_pushlightuserdata(lua, this);
  lua_setfield(lua, LUA_REGISTRYINDEX, kRegistryEngine);

  lua_newtable(lua);
  SetFunction(lua, "encode", &LuaGlue::JsonEncode, this);
  SetFunction(lua, "decode", &LuaGlue::JsonDecode, this);
  lua_pushlightuserdata(lua, nullptr);
  lua_setfield(lua, -2, "null");
  lua_setglobal(lua, "cjson");

  lua_pushlightuserdata(lua, this);
  lua_pushcclosure(lua, &LuaGlue::Pcall, 1);
  lua_setglobal(lua, "pcall");

  lua_newtable(lua);
  SetFunction(lua, "call", &LuaGlue::RedisCall, this);
  SetFunction(lua, "pcall", &LuaGlue::RedisPcall, this);
  SetFunction(lua, "sha1hex", &LuaGlue::Sha1, this);
  SetFunction(lua, "error_reply", &LuaGlue::ErrorReply, this);
  SetFunction(lua, "status_reply", &LuaGlue::StatusReply, this);
  SetFunction(lua, "log", &LuaGlue::Log, this);
  SetFunction(lua, "replicate_commands", &LuaGlue::ReturnTrue, this);
  SetFunction(lua, "set_repl", &LuaGlue::Nothing, this);
  SetNumber(lua, "LOG_DEBUG", 0);
  SetNumber(lua, "LOG_VERBOSE", 1);
  SetNumber(lua, "LOG_NOTICE", 2);
  SetNumber(lua, "LOG_WARNING", 3);
  SetNumber(lua, "REPL_NONE", 0);
  SetNumber(lua, "REPL_AOF", 1);
  SetNumber(lua, "REPL_SLAVE", 2);
  SetNumber(lua, "REPL_REPLICA", 2);
  SetNumber(lua, "REPL_ALL", 3);
  SetNumber(lua, "REDIS_VERSION_NUM", 0x07000f);
  lua_pushlstring(lua, kRedisCompatVersion.data(), kRedisCompatVersion.size());
  lua_setfield(lua, -2, "REDIS_VERSION");
  lua_setglobal(lua, "redis");

  // The error handler captures `debug`, then removes it from the globals.
  if (luaL_loadbuffer(lua, kErrorHandler.data(), kErrorHandler.size(), "@error_handler") != 0 ||
      lua_pcall(lua, 0, 1, 0) != 0) {
    std::fprintf(stderr, "lua: cannot create the error handler: %s\n", lua_tostring(lua, -1));
    std::abort();
  }
  error_handler_ref_ = luaL_ref(lua, LUA_REGISTRYINDEX);

  lua_newtable(lua);
  scripts_ref_ = luaL_ref(lua, LUA_REGISTRYINDEX);

  // Sandbox: the globals refuse reads of missing names and new names; scripts run in an empty
  // environment that reads through to the globals and refuses every assignment, so no script
  // can leave state for the next one (Redis 7 makes the globals read-only the same way).
  lua_pushvalue(lua, LUA_GLOBALSINDEX);
  lua_newtable(lua);
  lua_pushcfunction(lua, &LuaGlue::MissingGlobal);
  lua_setfield(lua, -2, "__index");
  lua_pushcfunction(lua, &LuaGlue::ReadOnly);
  lua_setfield(lua, -2, "__newindex");
  lua_setmetatable(lua, -2);

  lua_newtable(lua);  // the scripts' environment
  lua_newtable(lua);
  lua_pushvalue(lua, -3);
  lua_setfield(lua, -2, "__index");
  lua_pushcfunction(lua, &LuaGlue::ReadOnly);
  lua_setfield(lua, -2, "__newindex");
  lua_pushboolean(lua, 0);
  lua_setfield(lua, -2, "__metatable");
  lua_setmetatable(lua, -2);
  lua_pushvalue(lua, -1);
  lua_setfield(lua, -3, "_G");  // rawset is not needed: _G exists
  env_ref_ = luaL_ref(lua, LUA_REGISTRYINDEX);
  lua_pop(lua, 1);
}

bool LuaEngine::Exists(std::string_view sha) const {
  return sha.size() == 40 && scripts_.contains(AsciiLower(sha));
}

bool LuaEngine::Load(std::string_view body, std::string* sha, std::string* error) {
  *sha = Sha1Hex(body);
  if (scripts_.contains(*sha)) return true;
  // Redis 7's shebang line ("#!lua flags=..."): the flags only matter to features Keep lacks
  // (no-writes, allow-oom, ...), so they are accepted and ignored; the line stays a blank line
  // so error line numbers match.
  std::string_view code = body;
  if (code.starts_with("#!")) {
    size_t eol = code.find('\n');
    std::string_view shebang = code.substr(0, eol);
    std::string_view engine = shebang.substr(2, shebang.find(' ') - 2);
    if (engine != "lua") {
      *error = "ERR Unexpected engine in script shebang: ";
      error->append(shebang);
      return false;
    }
    code = eol == std::string_view::npos ? std::string_view() : code.substr(eol);
  }
  lua_State* lua = lua_;
  if (luaL_loadbuffer(lua, code.data(), code.size(), "@user_script") != 0) {
    *error = "ERR Error compiling script (new function): ";
    error->append(lua_tostring(lua, -1));
    lua_pop(lua, 1);
    return false;
  }
  lua_rawgeti(lua, LUA_REGISTRYINDEX, env_ref_);
  lua_setfenv(lua, -2);
  lua_rawgeti(lua, LUA_REGISTRYINDEX, scripts_ref_);
  lua_insert(lua, -2);
  lua_setfield(lua, -2, sha->c_str());
  lua_pop(lua, 1);
  scripts_.insert(*sha);
  return true;
}

namespace {

void SetArrayGlobal(lua_State* lua, const char* name, std::span<const std::string_view> values) {
  lua_createtable(lua, static_cast<int>(values.size()), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    lua_pushlstring(lua, values[i].data(), values[i].size());
    lua_rawseti(lua, -2, static_cast<int>(i + 1));
  }
  lua_pushstring(lua, name);
  lua_insert(lua, -2);
  lua_rawset(lua, LUA_GLOBALSINDEX);
}

}  // namespace

void LuaEngine::Run(CommandContext& ctx, std::string_view sha,
                    std::span<const std::string_view> keys, std::span<const std::string_view> argv,
                    bool slot_known) {
  lua_State* lua = lua_;
  std::string name = AsciiLower(sha);
  RunState run;
  run.ctx = &ctx;
  run.slot_known = slot_known;
  for (std::string_view key : keys) {
    if (ctx.slot_of != nullptr) {
      run.slots.push_back((*ctx.slot_of)(key));
    } else {
      run.tags.emplace_back(core::HashTag(key));
    }
  }
  run.limit_ms = ctx.limits.lua_time_limit_ms;
  if (run.limit_ms > 0) {
    run.has_deadline = true;
    run.deadline = Clock::now() + std::chrono::milliseconds(run.limit_ms);
    lua_sethook(lua, &LuaGlue::Hook, LUA_MASKCOUNT, kHookInstructions);
  }
  run_ = &run;

  SetArrayGlobal(lua, "KEYS", keys);
  SetArrayGlobal(lua, "ARGV", argv);
  // Redis reseeds before every script so math.random is deterministic per call.
  lua_getglobal(lua, "math");
  lua_getfield(lua, -1, "randomseed");
  lua_pushnumber(lua, 0);
  lua_call(lua, 1, 0);
  lua_pop(lua, 1);

  lua_rawgeti(lua, LUA_REGISTRYINDEX, error_handler_ref_);
  lua_rawgeti(lua, LUA_REGISTRYINDEX, scripts_ref_);
  lua_getfield(lua, -1, name.c_str());
  lua_remove(lua, -2);
  int status = lua_pcall(lua, 0, 1, -2);
  lua_sethook(lua, nullptr, 0, 0);
  if (status != 0) {
    std::string message = "ERR execution failure";
    if (lua_istable(lua, -1)) {
      std::string err, source, line;
      if (StringField(lua, -1, "err", &err)) message = err;
      if (StringField(lua, -1, "source", &source) && StringField(lua, -1, "line", &line)) {
        message.append(" script: ").append(name).append(", on ").append(source);
        message.append(":").append(line).append(".");
      }
    } else if (lua_isstring(lua, -1)) {
      message = "ERR Error running script ";
      message.append(name).append(", ").append(std::string(lua_tostring(lua, -1)).substr(0, 100));
    }
    ctx.reply.Error(message);
    lua_pop(lua, 1);
  } else {
    WriteReply(lua, ctx.reply);
  }
  lua_pop(lua, 1);  // the error handler
  run_ = nullptr;

  // Garbage collection in small steps, as Redis, so no single call pays for a full cycle.
  static thread_local int runs = 0;
  if (++runs == 50) {
    lua_gc(lua, LUA_GCSTEP, 50);
    runs = 0;
  }
}

bool LuaEngine::CheckKeys(const CommandSpec& spec, Routing routing,
                          std::span<const std::string_view> args, std::string_view* error) {
  constexpr std::string_view kNotAllowed = "This Redis command is not allowed from script";
  switch (routing) {
    case Routing::kLocal:
      // Subscriptions belong to a connection a script does not have.
      if (spec.flags & kPubSub) {
        *error = kNotAllowed;
        return false;
      }
      return true;
    case Routing::kAllShards:
    case Routing::kCursorShard:
      // Keep: these span every shard, which a script running on one shard cannot reach.
      *error = kNotAllowed;
      return false;
    case Routing::kSingleKey:
    case Routing::kEachKey:
      break;
  }
  size_t last = spec.last_key < 0 ? args.size() + spec.last_key : spec.last_key;
  if (spec.key_count != nullptr) last = spec.first_key + spec.key_count(args) - 1;
  int step = spec.key_step > 0 ? spec.key_step : 1;
  for (size_t i = spec.first_key; i > 0 && i <= last && i < args.size(); i += step) {
    std::string_view key = args[i];
    CommandContext& ctx = *run_->ctx;
    if (ctx.services != nullptr && !ctx.services->OwnsKey(key)) {
      *error = "Script attempted to access a non local key in a cluster node";
      return false;
    }
    if (ctx.slot_of != nullptr) {
      uint32_t slot = (*ctx.slot_of)(key);
      if (run_->slots.empty()) {
        run_->slots.push_back(slot);
        continue;
      }
      if (std::find(run_->slots.begin(), run_->slots.end(), slot) == run_->slots.end()) {
        *error = "Script attempted to access keys that do not hash to the same slot";
        return false;
      }
      continue;
    }
    std::string_view tag = core::HashTag(key);
    if (run_->tags.empty()) {
      run_->tags.emplace_back(tag);
      continue;
    }
    bool same = false;
    for (const std::string& allowed : run_->tags) same = same || allowed == tag;
    if (!same) {
      *error = "Script attempted to access keys that do not hash to the same slot";
      return false;
    }
  }
  return true;
}

bool LuaEngine::Call(lua_State* lua) {
  int argc = lua_gettop(lua);
  if (run_ == nullptr) {
    lua_settop(lua, 0);
    PushErrorTable(lua, "redis.call/pcall can only be called inside a script invocation");
    return true;
  }
  if (argc == 0) {
    PushErrorTable(lua, "Please specify at least one argument for this redis lib call");
    return true;
  }
  // Arguments as strings; numbers as Redis formats them ("%.17g", not Lua's "%.14g").
  std::vector<std::string> storage(argc);
  for (int j = 0; j < argc; ++j) {
    int type = lua_type(lua, j + 1);
    if (type == LUA_TNUMBER) {
      char buf[64];
      int len = std::snprintf(buf, sizeof(buf), "%.17g", lua_tonumber(lua, j + 1));
      storage[j].assign(buf, len);
    } else if (type == LUA_TSTRING) {
      size_t len;
      const char* s = lua_tolstring(lua, j + 1, &len);
      storage[j].assign(s, len);
    } else {
      lua_settop(lua, 0);
      PushErrorTable(lua, "Lua redis lib command arguments must be strings or integers");
      return true;
    }
  }
  lua_settop(lua, 0);
  std::vector<std::string_view> args(storage.begin(), storage.end());

  const CommandSpec* spec = CommandTable::Default().Find(args[0]);
  if (spec == nullptr) {
    PushErrorTable(lua, "Unknown Redis command called from script");
    return true;
  }
  bool arity_ok = spec->arity > 0 ? args.size() == static_cast<size_t>(spec->arity)
                                  : args.size() >= static_cast<size_t>(-spec->arity);
  if (!arity_ok) {
    PushErrorTable(lua, "Wrong number of args calling Redis command from script");
    return true;
  }
  if (spec->flags & kNoScript) {
    PushErrorTable(lua, "This Redis command is not allowed from script");
    return true;
  }
  Routing routing = spec->route_of != nullptr ? spec->route_of(args) : spec->routing;
  std::string_view refusal;
  if (!CheckKeys(*spec, routing, args, &refusal)) {
    PushErrorTable(lua, refusal);
    return true;
  }

  CommandContext& outer = *run_->ctx;
  std::string out;
  proto::ReplyWriter writer(&out, 2);  // scripts see RESP2 replies, as Redis by default
  ClientState scratch;  // kLocal commands (PING, TIME, ...) change no real connection
  scratch.id = outer.caller_id;
  CommandContext inner{.store = outer.store,
                       .now_ms = outer.now_ms,
                       .wall_drift_ms = outer.wall_drift_ms,
                       .args = args,
                       .reply = writer,
                       .limits = outer.limits,
                       .part = nullptr,
                       .client = routing == Routing::kLocal ? &scratch : nullptr,
                       .services = outer.services,
                       .shard_index = outer.shard_index,
                       .shard_count = outer.shard_count,
                       .caller_id = outer.caller_id,
                       .slot = outer.slot,
                       .slots = outer.slots,
                       .slot_of = outer.slot_of};
  spec->handler(inner);
  PushReply(lua, out, 0);
  return !out.empty() && out[0] == '-';
}

}  // namespace keep::commands
