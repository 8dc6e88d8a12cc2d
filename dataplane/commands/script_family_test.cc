// EVAL/EVALSHA/SCRIPT through the multi-shard fixture: replies byte for byte as Redis 7.0.15
// answers them (checked against redis-server 7.0.15), routing by KEYS, and Keep's limits.
#include <functional>

#include "dataplane/commands/fake_services.h"
#include "dataplane/commands/lua_engine.h"
#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

class ScriptTest : public CommandFixture {
 protected:
  ScriptTest()
      : CommandFixture(2, {StringCommands(), CounterCommands(), KeyCommands(), ScriptCommands()}) {
    // The fixture runs every shard on this thread, so they share one engine: start empty.
    LuaEngine::ForThisThread().Flush();
  }

  // "... script: <sha>, on @user_script:<line>." as Redis appends to a script's runtime error.
  static std::string ScriptErr(std::string_view message, std::string_view body, int line = 1) {
    std::string text(message);
    text.append(" script: ").append(Sha1Hex(body)).append(", on @user_script:");
    text.append(std::to_string(line)).append(".");
    return resp::Err(text);
  }
};

TEST_F(ScriptTest, Sha1MatchesKnownDigests) {
  EXPECT_EQ(Sha1Hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Sha1Hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Sha1Hex(std::string(1000, 'a')), "291e9a6c66994949b57ba5e650361e98fc36b1ba");
  EXPECT_EQ(Sha1Hex("return 1"), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}

TEST_F(ScriptTest, ReturnConversions) {
  EXPECT_EQ(Run({"EVAL", "return 1+1", "0"}), resp::Int(2));
  EXPECT_EQ(Run({"EVAL", "return 3.99", "0"}), resp::Int(3));
  EXPECT_EQ(Run({"EVAL", "return -3.99", "0"}), resp::Int(-3));
  EXPECT_EQ(Run({"EVAL", "return 1e20", "0"}), resp::Int(INT64_MIN));
  EXPECT_EQ(Run({"EVAL", "return 'hi'", "0"}), resp::Bulk("hi"));
  EXPECT_EQ(Run({"EVAL", "return true", "0"}), resp::Int(1));
  EXPECT_EQ(Run({"EVAL", "return false", "0"}), resp::kNil);
  EXPECT_EQ(Run({"EVAL", "return nil", "0"}), resp::kNil);
  EXPECT_EQ(Run({"EVAL", "return {1,2,3,'x',nil,5}", "0"}),
            resp::Array({resp::Int(1), resp::Int(2), resp::Int(3), resp::Bulk("x")}));
  EXPECT_EQ(Run({"EVAL", "return {1,{2,'a'},{}}", "0"}),
            resp::Array({resp::Int(1), resp::Array({resp::Int(2), resp::Bulk("a")}),
                         resp::Array(std::vector<std::string>{})}));
  EXPECT_EQ(Run({"EVAL", "return {ok='FINE'}", "0"}), resp::Simple("FINE"));
  EXPECT_EQ(Run({"EVAL", "return {err='x'}", "0"}), resp::Err("x"));
  EXPECT_EQ(Run({"EVAL", "return redis.status_reply('FINE')", "0"}), resp::Simple("FINE"));
  EXPECT_EQ(Run({"EVAL", "return redis.error_reply('My error')", "0"}), resp::Err("My error"));
  EXPECT_EQ(Run({"EVAL", "return redis.error_reply('x')", "0"}), resp::Err("ERR x"));
  EXPECT_EQ(Run({"EVAL", "return redis.sha1hex('')", "0"}),
            resp::Bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709"));
  EXPECT_EQ(Run({"EVAL", "return {KEYS[1], KEYS[2], ARGV[1], #ARGV}", "2", "{t}a", "{t}b", "v"}),
            resp::Array({resp::Bulk("{t}a"), resp::Bulk("{t}b"), resp::Bulk("v"), resp::Int(1)}));
}

TEST_F(ScriptTest, RedisCallConvertsReplies) {
  EXPECT_EQ(Run({"EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", "k", "v"}), resp::kOk);
  EXPECT_EQ(Run({"EVAL", "return redis.call('set', KEYS[1], 'v')['ok']", "1", "k"}),
            resp::Bulk("OK"));
  EXPECT_EQ(Run({"EVAL", "return redis.call('GET', KEYS[1])", "1", "k"}), resp::Bulk("v"));
  EXPECT_EQ(Run({"EVAL", "return redis.call('GET', KEYS[1]) == false", "1", "missing"}),
            resp::Int(1));
  EXPECT_EQ(Run({"EVAL", "return redis.call('INCRBY', KEYS[1], 5) + 1", "1", "n"}), resp::Int(6));
  // Numbers become arguments as "%.17g".
  EXPECT_EQ(
      Run({"EVAL", "redis.call('SET', KEYS[1], 3.5) return redis.call('GET', KEYS[1])", "1", "f"}),
      resp::Bulk("3.5"));
  // Split commands run whole on the script's shard.
  EXPECT_EQ(Run({"EVAL", "return redis.call('MGET', KEYS[1], KEYS[2])", "2", "{u}a", "{u}b"}),
            resp::Array({std::string(resp::kNil), std::string(resp::kNil)}));
  EXPECT_EQ(Run({"EVAL",
                 "redis.call('MSET', KEYS[1], 1, KEYS[2], 2) return redis.call('DEL', "
                 "KEYS[1], KEYS[2])",
                 "2", "{u}a", "{u}b"}),
            resp::Int(2));
  EXPECT_EQ(Run({"EVAL", "return redis.call('PING')", "0"}), resp::Simple("PONG"));
}

TEST_F(ScriptTest, CallErrorsRaiseAndPcallReturnsThem) {
  Run({"SET", "str", "abc"});
  std::string body = "redis.call('INCR', KEYS[1])";
  EXPECT_EQ(Run({"EVAL", body, "1", "str"}),
            ScriptErr("ERR value is not an integer or out of range", body));
  EXPECT_EQ(Run({"EVAL", "return redis.pcall('INCR', KEYS[1])", "1", "str"}),
            resp::Err("ERR value is not an integer or out of range"));
  EXPECT_EQ(Run({"EVAL", "local r = redis.pcall('INCR', KEYS[1]) return r['err']", "1", "str"}),
            resp::Bulk("ERR value is not an integer or out of range"));
  EXPECT_EQ(Run({"EVAL", "local ok, e = pcall(function() redis.call('INCR', KEYS[1]) end) return e",
                 "1", "str"}),
            resp::Bulk("ERR value is not an integer or out of range"));
  // LuaJIT drops the caller's frame on a tail call ("return redis.call(...)"), so the error
  // loses its position suffix; elsewhere it has Redis's.
  EXPECT_EQ(Run({"EVAL", "return redis.call('nosuch')", "0"}),
            resp::Err("ERR Unknown Redis command called from script"));
  body = "local r = redis.call('nosuch') return r";
  EXPECT_EQ(Run({"EVAL", body, "0"}),
            ScriptErr("ERR Unknown Redis command called from script", body));
  EXPECT_EQ(Run({"EVAL", "return redis.pcall('nosuch')", "0"}),
            resp::Err("ERR Unknown Redis command called from script"));
  body = "local r = redis.call('ZADD', KEYS[1], 1, 'm') return r";
  EXPECT_EQ(Run({"EVAL", body, "1", "z"}),
            ScriptErr("ERR Unknown Redis command called from script", body));
  body = "redis.call('get', KEYS[1], 'x')";
  EXPECT_EQ(Run({"EVAL", body, "1", "k"}),
            ScriptErr("ERR Wrong number of args calling Redis command from script", body));
  body = "redis.call()";
  EXPECT_EQ(Run({"EVAL", body, "0"}),
            ScriptErr("ERR Please specify at least one argument for this redis lib call", body));
  body = "redis.call({})";
  EXPECT_EQ(Run({"EVAL", body, "0"}),
            ScriptErr("ERR Lua redis lib command arguments must be strings or integers", body));
  body = "error('boom')";
  EXPECT_EQ(Run({"EVAL", body, "0"}), ScriptErr("ERR user_script:1: boom", body));
  body = "error({err='MYERR x'})";
  EXPECT_EQ(Run({"EVAL", body, "0"}), ScriptErr("MYERR x", body));
  body = "local x = 1\nredis.call('nosuch')";
  EXPECT_EQ(Run({"EVAL", body, "0"}),
            ScriptErr("ERR Unknown Redis command called from script", body, 2));
}

TEST_F(ScriptTest, CommandsNotAllowedFromScripts) {
  for (std::string cmd :
       {"EVAL", "SCRIPT", "CLIENT", "CONFIG", "SHUTDOWN", "DBSIZE", "KEYS", "FLUSHALL", "SCAN"}) {
    std::string body = "return redis.call('" + cmd + "', 'a', 'b')";
    if (table().Find(cmd) == nullptr && CommandTable::Default().Find(cmd) == nullptr) continue;
    std::string reply = Run({"EVAL", body, "0"});
    EXPECT_TRUE(reply.find("This Redis command is not allowed from script") != std::string::npos ||
                reply.find("Wrong number of args") != std::string::npos)
        << cmd << ": " << reply;
  }
  std::string body = "redis.call('DBSIZE')";
  EXPECT_EQ(Run({"EVAL", body, "0"}),
            ScriptErr("ERR This Redis command is not allowed from script", body));
}

TEST_F(ScriptTest, NumKeysErrors) {
  EXPECT_EQ(Run({"EVAL", "return 1", "-1"}), resp::Err("ERR Number of keys can't be negative"));
  EXPECT_EQ(Run({"EVAL", "return 1", "3", "a"}),
            resp::Err("ERR Number of keys can't be greater than number of args"));
  EXPECT_EQ(Run({"EVAL", "return 1", "x"}),
            resp::Err("ERR value is not an integer or out of range"));
  EXPECT_EQ(Run({"EVALSHA", "abc", "-1"}), resp::Err("ERR Number of keys can't be negative"));
  EXPECT_EQ(Run({"EVAL", "return 1"}),
            resp::Err("ERR wrong number of arguments for 'eval' command"));
}

TEST_F(ScriptTest, RoutesByKeysAndRefusesCrossSlot) {
  EXPECT_EQ(Run({"EVAL", "return 1", "2", "a", "b"}),
            resp::Err("CROSSSLOT Keys in request don't hash to the same slot"));
  std::vector<std::string> keys = KeysOnShard(1, 1);
  EXPECT_EQ(Run({"EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", keys[0]}), resp::kOk);
  EXPECT_EQ(last_plan().shard, 1);
  EXPECT_EQ(store(1).Find(keys[0]) != nullptr, true);
  EXPECT_EQ(Run({"EVAL", "return 1", "0", "arg"}), resp::Int(1));
  EXPECT_EQ(last_plan().routing, Routing::kLocal);
}

class OwnershipServices : public FakeServices {
 public:
  bool OwnsKey(std::string_view key) override { return owns(key); }
  std::function<bool(std::string_view)> owns;
};

TEST_F(ScriptTest, RefusesKeysOutsideTheScriptsSlot) {
  OwnershipServices services;
  set_services(&services);
  std::vector<std::string> keys = KeysOnShard(0, 1);
  std::vector<std::string> remote = KeysOnShard(1, 1);
  services.owns = [this](std::string_view key) { return ShardOf(key) == 0; };
  std::string body = "redis.call('GET', ARGV[1])";
  EXPECT_EQ(Run({"EVAL", body, "1", keys[0], remote[0]}),
            ScriptErr("ERR Script attempted to access a non local key in a cluster node", body));
  std::vector<std::string> same_shard = KeysOnShard(0, 2, "other:");
  EXPECT_EQ(
      Run({"EVAL", body, "1", keys[0], same_shard[1]}),
      ScriptErr("ERR Script attempted to access keys that do not hash to the same slot", body));
  // Keys sharing the declared key's hash tag are fine, declared or not.
  EXPECT_EQ(Run({"EVAL", body, "1", "{" + keys[0] + "}", "{" + keys[0] + "}.x"}), resp::kNil);
  services.owns = [](std::string_view) { return true; };
  // Without declared keys, the first key touched fixes the slot.
  body = "redis.call('GET', ARGV[1]) local v = redis.call('GET', ARGV[2]) return v";
  EXPECT_EQ(Run({"EVAL", body, "0", "{t}a", "{t}b"}), resp::kNil);
  services.owns = [](std::string_view) { return true; };
  EXPECT_EQ(
      Run({"EVAL", body, "0", "{t}a", "{v}b"}),
      ScriptErr("ERR Script attempted to access keys that do not hash to the same slot", body));
  set_services(nullptr);
}

TEST_F(ScriptTest, EvalShaAndScriptCache) {
  std::string body = "return ARGV[1]";
  std::string sha = Sha1Hex(body);
  EXPECT_EQ(Run({"EVALSHA", sha, "0", "x"}),
            resp::Err("NOSCRIPT No matching script. Please use EVAL."));
  EXPECT_EQ(Run({"SCRIPT", "EXISTS", sha, "nope"}), resp::Array({resp::Int(0), resp::Int(0)}));
  EXPECT_EQ(Run({"SCRIPT", "LOAD", body}), resp::Bulk(sha));
  EXPECT_EQ(Run({"SCRIPT", "EXISTS", sha, "nope"}), resp::Array({resp::Int(1), resp::Int(0)}));
  EXPECT_EQ(Run({"EVALSHA", sha, "0", "x"}), resp::Bulk("x"));
  // The digest is accepted in any case.
  std::string upper = sha;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(Run({"EVALSHA", upper, "0", "y"}), resp::Bulk("y"));
  EXPECT_EQ(Run({"SCRIPT", "FLUSH"}), resp::kOk);
  EXPECT_EQ(Run({"EVALSHA", sha, "0", "x"}),
            resp::Err("NOSCRIPT No matching script. Please use EVAL."));
  EXPECT_EQ(Run({"EVAL", body, "0", "z"}), resp::Bulk("z"));
  EXPECT_EQ(Run({"EVALSHA", sha, "0", "x"}), resp::Bulk("x"));
  EXPECT_EQ(Run({"SCRIPT", "FLUSH", "ASYNC"}), resp::kOk);
  EXPECT_EQ(Run({"SCRIPT", "FLUSH", "SYNC"}), resp::kOk);
  EXPECT_EQ(Run({"SCRIPT", "FLUSH", "foo"}),
            resp::Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option"));
  EXPECT_EQ(Run({"SCRIPT", "KILL"}), resp::Err("NOTBUSY No scripts in execution right now."));
  EXPECT_EQ(Run({"SCRIPT", "LOAD"}),
            resp::Err("ERR wrong number of arguments for 'script|load' command"));
  EXPECT_EQ(Run({"SCRIPT", "EXISTS"}),
            resp::Err("ERR wrong number of arguments for 'script|exists' command"));
  EXPECT_EQ(Run({"SCRIPT", "foo"}), resp::Err("ERR unknown subcommand 'foo'. Try SCRIPT HELP."));
  EXPECT_EQ(Run({"SCRIPT"}), resp::Err("ERR wrong number of arguments for 'script' command"));
  EXPECT_EQ(Run({"SCRIPT", "HELP"}).substr(0, 5), "*15\r\n");
}

TEST_F(ScriptTest, CompileErrors) {
  EXPECT_EQ(Run({"EVAL", "retur 1", "0"}),
            resp::Err("ERR Error compiling script (new function): user_script:1: '=' expected "
                      "near '1'"));
  EXPECT_EQ(Run({"SCRIPT", "LOAD", "retur 1"}),
            resp::Err("ERR Error compiling script (new function): user_script:1: '=' expected "
                      "near '1'"));
  EXPECT_EQ(Run({"EVAL", "#!lua\nreturn 1", "0"}), resp::Int(1));
  EXPECT_EQ(Run({"EVAL", "#!lua flags=no-writes\nreturn 2", "0"}), resp::Int(2));
  EXPECT_EQ(Run({"EVAL", "#!foo\nreturn 2", "0"}),
            resp::Err("ERR Unexpected engine in script shebang: #!foo"));
}

TEST_F(ScriptTest, SandboxProtectsGlobals) {
  std::string body = "a = 1";
  EXPECT_EQ(Run({"EVAL", body, "0"}),
            ScriptErr("ERR user_script:1: Attempt to modify a readonly table", body));
  body = "return a";
  EXPECT_EQ(Run({"EVAL", body, "0"}),
            ScriptErr("ERR user_script:1: Script attempted to access nonexistent global variable "
                      "'a'",
                      body));
  body = "redis = nil";
  EXPECT_EQ(Run({"EVAL", body, "0"}),
            ScriptErr("ERR user_script:1: Attempt to modify a readonly table", body));
  for (std::string name : {"os", "io", "require", "loadfile", "dofile", "print", "debug", "jit",
                           "ffi", "package", "module"}) {
    body = "return " + name;
    EXPECT_EQ(Run({"EVAL", body, "0"}),
              ScriptErr("ERR user_script:1: Script attempted to access nonexistent global "
                        "variable '" +
                            name + "'",
                        body))
        << name;
  }
  // Locals and the allowed libraries work.
  EXPECT_EQ(Run({"EVAL",
                 "local t = {} table.insert(t, string.upper('a')) return t[1] .. "
                 "math.floor(2.5) .. bit.band(7, 2)",
                 "0"}),
            resp::Bulk("A22"));
}

TEST_F(ScriptTest, Cjson) {
  EXPECT_EQ(Run({"EVAL", "return cjson.encode({a=1,b={1,2,'x'}})", "0"}),
            resp::Bulk("{\"a\":1,\"b\":[1,2,\"x\"]}"));
  EXPECT_EQ(Run({"EVAL", "return cjson.decode('[1,2,{\"a\":3}]')[3].a", "0"}), resp::Int(3));
  EXPECT_EQ(Run({"EVAL", "return cjson.decode('{\"a\":null}').a == cjson.null", "0"}),
            resp::Int(1));
  EXPECT_EQ(Run({"EVAL", "return redis.pcall('x') and pcall(cjson.decode, '{') == false", "0"}),
            resp::Int(1));
}

TEST_F(ScriptTest, TimeLimitAbortsRunawayScripts) {
  limits().lua_time_limit_ms = 50;
  std::string body = "while true do end";
  std::string reply = Run({"EVAL", body, "0"});
  EXPECT_EQ(reply, ScriptErr("ERR Script killed by timeout: it ran longer than lua-time-limit "
                             "(50 ms)",
                             body));
  // A script that catches errors cannot outlive the limit either.
  reply = Run({"EVAL", "while true do pcall(function() while true do end end) end", "0"});
  EXPECT_NE(reply.find("Script killed by timeout"), std::string::npos) << reply;
  // The engine is usable afterwards.
  EXPECT_EQ(Run({"EVAL", "return redis.call('INCR', KEYS[1])", "1", "after"}), resp::Int(1));
  EXPECT_EQ(Run({"EVALSHA", Sha1Hex(body), "0"}).find("Script killed"), 5u);
}

}  // namespace
}  // namespace keep::commands
