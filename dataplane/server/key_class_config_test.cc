// The memory cap and the [[key_class]] tables of the config file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dataplane/server/config.h"

namespace keep::server {
namespace {

LoadResult LoadFile(const std::string& toml, std::vector<std::string> args = {}) {
  auto path = std::filesystem::temp_directory_path() /
              ("keep_key_class_test_" + std::to_string(getpid()) + ".toml");
  std::ofstream(path) << toml;
  args.insert(args.begin(), {"keep-server", "--config", path.string()});
  LoadResult result = LoadConfig(args, {});
  std::filesystem::remove(path);
  return result;
}

TEST(KeyClassConfigTest, MaxmemoryTakesRedisUnits) {
  LoadResult r = LoadConfig({"keep-server", "--maxmemory", "64mb"}, {});
  ASSERT_TRUE(r.config) << r.message;
  EXPECT_EQ(r.config->maxmemory, 64 << 20);
  r = LoadConfig({"keep-server", "--maxmemory=1gb"}, {});
  ASSERT_TRUE(r.config) << r.message;
  EXPECT_EQ(r.config->maxmemory, int64_t{1} << 30);
  r = LoadConfig({"keep-server"}, {"KEEP_MAXMEMORY=100k"});
  ASSERT_TRUE(r.config) << r.message;
  EXPECT_EQ(r.config->maxmemory, 100000);
  r = LoadConfig({"keep-server"}, {});
  EXPECT_EQ(r.config->maxmemory, 0);
  for (const char* bad : {"-1", "12xb", "lots", ""}) {
    r = LoadConfig({"keep-server", "--maxmemory", bad}, {});
    EXPECT_FALSE(r.config) << bad;
    EXPECT_NE(r.message.find("maxmemory"), std::string::npos) << r.message;
  }
  r = LoadFile("maxmemory = \"8mb\"\n");
  ASSERT_TRUE(r.config) << r.message;
  EXPECT_EQ(r.config->maxmemory, 8 << 20);
}

TEST(KeyClassConfigTest, ParsesClasses) {
  LoadResult r = LoadFile(R"(
maxmemory = "64mb"

[[key_class]]
name = "session"
bytes = "s"
policy = "ttl"

[[key_class]]
name = "control"
bytes = "\\x00-\\x1f,_"
policy = "pinned"

[[key_class]]
name = "default"
policy = "none"
)");
  ASSERT_TRUE(r.config) << r.message;
  ASSERT_EQ(r.config->key_classes.size(), 3u);
  EXPECT_EQ(r.config->key_classes[0].name, "session");
  EXPECT_EQ(r.config->key_classes[1].bytes, "\\x00-\\x1f,_");
  core::KeyClassTable table;
  std::string error;
  ASSERT_TRUE(core::KeyClassTable::Build(r.config->key_classes, &table, &error)) << error;
  EXPECT_EQ(table.NameOf(table.ClassOf(std::string_view("\x05", 1))), "control");
  EXPECT_EQ(table.PolicyOf(table.ClassOf("user")), core::EvictionPolicy::kNone);
}

TEST(KeyClassConfigTest, StartupErrorsNameTheProblem) {
  struct Case {
    const char* toml;
    const char* expected;
  };
  for (const Case& c : {
           Case{"[[key_class]]\nname = \"\"\nbytes = \"a\"\n", "empty name"},
           Case{"[[key_class]]\nname = \"a\"\nbytes = \"a\"\npolicy = \"lfu\"\n",
                "unknown policy 'lfu'"},
           Case{"[[key_class]]\nname = \"a\"\nbytes = \"a-f\"\n[[key_class]]\nname = \"b\"\n"
                "bytes = \"c\"\n",
                "overlap"},
           Case{"[[key_class]]\nname = \"a\"\n", "has no bytes"},
           Case{"[[key_class]]\nname = \"a\"\nbytes = \"a\"\ncolour = \"red\"\n",
                "unknown key_class field 'colour'"},
           Case{"[[key_class]]\nname = \"a\"\nbytes = 5\n", "must be a string"},
           Case{"key_class = \"a\"\n", "array of tables"},
           Case{"[[key_class]]\nname = \"a\"\nbytes = \"z-a\"\n", "key_class 'a'"},
       }) {
    LoadResult r = LoadFile(c.toml);
    EXPECT_FALSE(r.config) << c.toml;
    EXPECT_NE(r.message.find(c.expected), std::string::npos) << r.message;
  }
}

}  // namespace
}  // namespace keep::server
