#include "dataplane/server/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace keep::server {
namespace {

LoadResult Load(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), "keep-server");
  return LoadConfig(args, env);
}

TEST(ConfigTest, Defaults) {
  LoadResult r = Load({});
  ASSERT_TRUE(r.config.has_value()) << r.message;
  EXPECT_EQ(r.config->bind, "127.0.0.1");
  EXPECT_EQ(r.config->port, 7000);
  EXPECT_EQ(r.config->shards, 0);
  EXPECT_FALSE(r.config->enable_debug_command);
}

TEST(ConfigTest, FlagsInBothForms) {
  LoadResult r = Load({"--port", "7100", "--shards=3", "--enable-debug-command", "--pin", "never"});
  ASSERT_TRUE(r.config.has_value()) << r.message;
  EXPECT_EQ(r.config->port, 7100);
  EXPECT_EQ(r.config->shards, 3);
  EXPECT_TRUE(r.config->enable_debug_command);
  EXPECT_EQ(r.config->pin, PinMode::kNever);
}

TEST(ConfigTest, BooleanFlagTakesNoValue) {
  LoadResult r = Load({"--enable-debug-command", "--port", "7001"});
  ASSERT_TRUE(r.config.has_value()) << r.message;
  EXPECT_EQ(r.config->port, 7001);
}

TEST(ConfigTest, UnknownAndBadValuesAreNamed) {
  LoadResult unknown = Load({"--no-such-thing", "1"});
  EXPECT_FALSE(unknown.config.has_value());
  EXPECT_NE(unknown.message.find("--no-such-thing"), std::string::npos);
  LoadResult bad = Load({"--port", "70000"});
  EXPECT_FALSE(bad.config.has_value());
  EXPECT_NE(bad.message.find("port"), std::string::npos);
  LoadResult missing = Load({"--port"});
  EXPECT_FALSE(missing.config.has_value());
  LoadResult pin = Load({"--pin", "sometimes"});
  EXPECT_FALSE(pin.config.has_value());
  EXPECT_NE(pin.message.find("pin"), std::string::npos);
}

TEST(ConfigTest, FlagBeatsEnvironmentBeatsFile) {
  auto path = std::filesystem::temp_directory_path() / "keep_config_test.toml";
  std::ofstream(path) << "port = 7200\nshards = 2\nmaxclients = 50\nbind = \"127.0.0.2\"\n";
  LoadResult r = Load({"--config", path.string(), "--port", "7300"},
                      {"KEEP_SHARDS=4", "KEEP_UNRELATED=1", "PATH=/bin"});
  ASSERT_TRUE(r.config.has_value()) << r.message;
  EXPECT_EQ(r.config->port, 7300);
  EXPECT_EQ(r.config->shards, 4);
  EXPECT_EQ(r.config->maxclients, 50);
  EXPECT_EQ(r.config->bind, "127.0.0.2");
  std::filesystem::remove(path);
}

TEST(ConfigTest, FileErrorsNameTheKey) {
  auto path = std::filesystem::temp_directory_path() / "keep_config_bad.toml";
  std::ofstream(path) << "prot = 7200\n";
  LoadResult r = Load({"--config", path.string()});
  EXPECT_FALSE(r.config.has_value());
  EXPECT_NE(r.message.find("prot"), std::string::npos);
  std::ofstream(path) << "port = \"many\"\n";
  r = Load({"--config", path.string()});
  EXPECT_FALSE(r.config.has_value());
  EXPECT_NE(r.message.find("port"), std::string::npos);
  std::ofstream(path) << "port = [\n";
  r = Load({"--config", path.string()});
  EXPECT_FALSE(r.config.has_value());
  std::filesystem::remove(path);
}

TEST(ConfigTest, EnvironmentValuesAreValidated) {
  LoadResult r = Load({}, {"KEEP_TIMEOUT=soon"});
  EXPECT_FALSE(r.config.has_value());
  EXPECT_NE(r.message.find("KEEP_TIMEOUT"), std::string::npos);
}

TEST(ConfigTest, Sizes) {
  EXPECT_EQ(ParseSize("1024"), 1024);
  EXPECT_EQ(ParseSize("64kb"), 64 * 1024);
  EXPECT_EQ(ParseSize("64k"), 64000);
  EXPECT_EQ(ParseSize("2GB"), 2ll * 1024 * 1024 * 1024);
  EXPECT_FALSE(ParseSize("12parsecs").has_value());
  EXPECT_FALSE(ParseSize("").has_value());
  LoadResult r = Load({"--client-output-buffer-limit", "64mb"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->client_output_buffer_limit, 64ll * 1024 * 1024);
}

TEST(ConfigTest, SecretsComeFromFilesOrEnvironmentOnly) {
  auto path = std::filesystem::temp_directory_path() / "keep_requirepass";
  std::ofstream(path) << "hunter2\n";
  LoadResult r = Load({"--requirepass-file", path.string()});
  ASSERT_TRUE(r.config.has_value()) << r.message;
  EXPECT_EQ(r.config->requirepass, "hunter2");
  r = Load({}, {"KEEP_REQUIREPASS=s3cret"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->requirepass, "s3cret");
  r = Load({"--requirepass-file", path.string()}, {"KEEP_REQUIREPASS=x"});
  EXPECT_FALSE(r.config.has_value());
  EXPECT_FALSE(Load({"--requirepass", "x"}).config.has_value());
  std::filesystem::remove(path);
}

TEST(ConfigTest, LockAndScriptLimits) {
  LoadResult r = Load({"--max-lock-ttl", "30000", "--lua-time-limit", "250"});
  ASSERT_TRUE(r.config.has_value()) << r.message;
  EXPECT_EQ(r.config->max_lock_ttl_ms, 30000);
  EXPECT_EQ(r.config->lua_time_limit_ms, 250);
  EXPECT_FALSE(Load({"--max-lock-ttl", "0"}).config.has_value());
  EXPECT_FALSE(Load({"--lua-time-limit", "-5"}).config.has_value());
}

TEST(ConfigTest, ClusterSettingsAndSecrets) {
  LoadResult r = Load({"--members", "a@127.0.0.1:7000:7001:2", "--member-id", "a", "--slot-hash",
                       "crc16", "--admin-port", "9000"},
                      {"KEEP_SECRET=cluster", "KEEP_PEER_SECRET=peer"});
  ASSERT_TRUE(r.config.has_value()) << r.message;
  EXPECT_EQ(r.config->members, "a@127.0.0.1:7000:7001:2");
  EXPECT_EQ(r.config->member_id, "a");
  EXPECT_TRUE(r.config->slot_hash_crc16);
  EXPECT_EQ(r.config->admin_port, 9000);
  EXPECT_EQ(r.config->cluster_secret, "cluster");
  EXPECT_EQ(r.config->peer_secret, "peer");
  auto path = std::filesystem::temp_directory_path() / "keep_peer_secret";
  std::ofstream(path) << "from-file\n";
  r = Load({"--peer-secret-file", path.string()});
  ASSERT_TRUE(r.config.has_value()) << r.message;
  EXPECT_EQ(r.config->peer_secret, "from-file");
  r = Load({"--peer-secret-file", path.string()}, {"KEEP_PEER_SECRET=x"});
  EXPECT_FALSE(r.config.has_value());
  EXPECT_NE(r.message.find("choose one"), std::string::npos);
  std::filesystem::remove(path);
  EXPECT_FALSE(Load({"--slot-hash", "md5"}).config.has_value());
  EXPECT_FALSE(Load({"--peer-secret", "x"}).config.has_value());
  EXPECT_FALSE(Load({}, {"KEEP_SECRET="}).config.has_value());
  EXPECT_FALSE(Load({"--members", "a@h:1:2:1", "--members-file", "/x"}).config.has_value());
  EXPECT_FALSE(Load({"--peer-secret-file", "/nonexistent/keep"}).config.has_value());
}

TEST(ConfigTest, ReadmeDocumentsEverySetting) {
  std::ifstream readme(std::string(KEEP_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(readme.good());
  std::string text((std::istreambuf_iterator<char>(readme)), std::istreambuf_iterator<char>());
  std::string reference = ConfigReference();
  size_t at = 0;
  int settings = 0;
  while ((at = reference.find("  --", at)) != std::string::npos) {
    at += 4;
    std::string name = reference.substr(at, reference.find_first_of(" \n", at) - at);
    EXPECT_NE(text.find("| `" + name + "` |"), std::string::npos) << name << " is not in README.md";
    ++settings;
  }
  EXPECT_GT(settings, 10);
}

TEST(ConfigTest, HelpListsEverySetting) {
  LoadResult r = Load({"--help"});
  EXPECT_TRUE(r.exit_ok);
  EXPECT_NE(r.message.find("--shard-port-base"), std::string::npos);
  EXPECT_NE(r.message.find("KEEP_MAXCLIENTS"), std::string::npos);
}

}  // namespace
}  // namespace keep::server
