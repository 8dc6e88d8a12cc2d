// The engine on its own: the script cache, and running a script against a bare store.
#include "dataplane/commands/lua_engine.h"

#include <gtest/gtest.h>

#include "dataplane/core/store.h"

namespace keep::commands {
namespace {

TEST(LuaEngineTest, LoadExistsFlush) {
  LuaEngine engine;
  std::string sha, error;
  ASSERT_TRUE(engine.Load("return 1", &sha, &error)) << error;
  EXPECT_EQ(sha, Sha1Hex("return 1"));
  EXPECT_TRUE(engine.Exists(sha));
  EXPECT_FALSE(engine.Exists("abc"));
  EXPECT_EQ(engine.script_count(), 1u);
  ASSERT_TRUE(engine.Load("return 1", &sha, &error));  // cached: loaded once
  EXPECT_EQ(engine.script_count(), 1u);
  EXPECT_FALSE(engine.Load("return (", &sha, &error));
  EXPECT_EQ(error.rfind("ERR Error compiling script (new function): user_script:1:", 0), 0u)
      << error;
  engine.Flush();
  EXPECT_FALSE(engine.Exists(Sha1Hex("return 1")));
  EXPECT_EQ(engine.script_count(), 0u);
}

TEST(LuaEngineTest, RunsAgainstAStore) {
  LuaEngine engine;
  core::Store store;
  Limits limits;
  std::string out;
  proto::ReplyWriter reply(&out, 2);
  std::vector<std::string_view> args = {"EVAL", "", "1", "k", "5"};
  CommandContext ctx{.store = store, .now_ms = 0, .args = args, .reply = reply, .limits = limits};
  std::string sha, error;
  ASSERT_TRUE(engine.Load("return redis.call('INCRBY', KEYS[1], ARGV[1])", &sha, &error));
  std::vector<std::string_view> keys = {"k"}, argv = {"5"};
  engine.Run(ctx, sha, keys, argv, true);
  engine.Run(ctx, sha, keys, argv, true);
  EXPECT_EQ(out, ":5\r\n:10\r\n");
  // State does not leak between scripts.
  out.clear();
  ASSERT_TRUE(engine.Load("return type(KEYS[2])", &sha, &error));
  engine.Run(ctx, sha, keys, {}, true);
  EXPECT_EQ(out, "$3\r\nnil\r\n");
}

TEST(LuaEngineTest, RedisCallOutsideAScriptIsAnError) {
  LuaEngine engine;
  core::Store store;
  Limits limits;
  std::string out;
  proto::ReplyWriter reply(&out, 2);
  std::vector<std::string_view> args = {"EVAL", "", "0"};
  CommandContext ctx{.store = store, .now_ms = 0, .args = args, .reply = reply, .limits = limits};
  std::string sha, error;
  // A function saved by one run and called by the next still sees a script context; there is
  // no way to keep one across runs (globals are read-only), so only the in-run path exists.
  ASSERT_TRUE(engine.Load("return select('#', redis.pcall('PING'))", &sha, &error));
  engine.Run(ctx, sha, {}, {}, false);
  EXPECT_EQ(out, ":1\r\n");
}

}  // namespace
}  // namespace keep::commands
