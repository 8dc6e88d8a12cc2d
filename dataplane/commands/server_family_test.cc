#include <gtest/gtest.h>

#include "dataplane/commands/fake_services.h"
#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

class ServerFamilyTest : public CommandFixture {
 protected:
  ServerFamilyTest()
      : CommandFixture(2,
                       {ServerCommands(), ConnectionCommands(), StringCommands(), KeyCommands()}) {
    set_services(&services_);
  }
  FakeServices services_;
};

TEST_F(ServerFamilyTest, InfoSumsShardsAndSelectsSections) {
  std::string reply = Run({"INFO"});
  EXPECT_NE(reply.find("# Server\r\nredis_version:7.0.15\r\n"), std::string::npos) << reply;
  // Two shards each report 3 clients and 10 commands.
  EXPECT_NE(reply.find("connected_clients:6\r\n"), std::string::npos);
  EXPECT_NE(reply.find("total_commands_processed:20\r\n"), std::string::npos);
  // Redis's section first (clients parse it), then Keep's key classes.
  const std::string classes =
      "\r\n# Keyclasses\r\nclass_default:policy=lru,keys=0,bytes=0,evicted_keys=0,"
      "expired_keys=0\r\n";
  std::string keyspace = Run({"INFO", "keyspace"});
  EXPECT_EQ(keyspace, resp::Bulk("# Keyspace\r\n" + classes));
  services_.stats_.keys = 5;
  services_.stats_.keys_with_expiry = 1;
  EXPECT_EQ(Run({"INFO", "KEYSPACE"}),
            resp::Bulk("# Keyspace\r\ndb0:keys=10,expires=2,avg_ttl=0\r\n" + classes));
  EXPECT_EQ(Run({"INFO", "nosuchsection"}), resp::Bulk(""));
  // Counters add up over shards; expiry lag is the worst shard's, not a sum.
  services_.stats_.expiry_lag_ms = 40;
  services_.stats_.eventloop_cycles = 3;
  services_.stats_.eventloop_duration_sum_us = 70;
  services_.stats_.eventloop_duration_max_us = 50;
  std::string stats = Run({"INFO", "stats"});
  EXPECT_NE(stats.find("expiry_lag_ms:40\r\n"), std::string::npos) << stats;
  // Turns and their time add up; the longest turn is the worst shard's.
  EXPECT_NE(stats.find("eventloop_cycles:6\r\n"), std::string::npos) << stats;
  EXPECT_NE(stats.find("eventloop_duration_sum:140\r\n"), std::string::npos) << stats;
  EXPECT_NE(stats.find("eventloop_duration_max:50\r\n"), std::string::npos) << stats;
  // Defragmentation: shards' figures add up; the ratio is of the member's totals.
  services_.stats_.used_bytes = 400;
  services_.stats_.allocator_frag_bytes = 100;
  services_.stats_.active_defrag_running = 1;
  services_.stats_.active_defrag_hits = 7;
  std::string memory = Run({"INFO", "memory"});
  EXPECT_NE(memory.find("allocator_frag_bytes:200\r\n"), std::string::npos) << memory;
  EXPECT_NE(memory.find("allocator_frag_ratio:1.25\r\n"), std::string::npos) << memory;
  EXPECT_NE(memory.find("active_defrag_running:2\r\n"), std::string::npos) << memory;
  stats = Run({"INFO", "stats"});
  EXPECT_NE(stats.find("active_defrag_hits:14\r\n"), std::string::npos) << stats;
  EXPECT_TRUE(RunResp3({"INFO", "keyspace"}).starts_with("="));
}

TEST_F(ServerFamilyTest, ConfigGetAndSet) {
  EXPECT_EQ(Run({"CONFIG", "GET", "timeout"}), resp::BulkArray({"timeout", "0"}));
  EXPECT_EQ(Run({"CONFIG", "GET", "max*"}), resp::BulkArray({"maxclients", "10000"}));
  EXPECT_EQ(Run({"CONFIG", "GET", "nothing"}), "*0\r\n");
  EXPECT_EQ(RunResp3({"CONFIG", "GET", "timeout"}), "%1\r\n$7\r\ntimeout\r\n$1\r\n0\r\n");
  EXPECT_EQ(Run({"CONFIG", "SET", "timeout", "5"}), "+OK\r\n");
  EXPECT_EQ(services_.config["timeout"], "5");
  EXPECT_EQ(Run({"CONFIG", "SET", "bogus", "1"}),
            resp::Err("ERR Unknown option or number of arguments for CONFIG SET - 'bogus'"));
  EXPECT_EQ(Run({"CONFIG", "SET", "timeout"}),
            resp::Err("ERR wrong number of arguments for 'config|set' command"));
  EXPECT_EQ(Run({"CONFIG", "GET"}),
            resp::Err("ERR wrong number of arguments for 'config|get' command"));
  EXPECT_EQ(Run({"CONFIG", "NOPE"}), resp::Err("ERR unknown subcommand 'NOPE'. Try CONFIG HELP."));
  EXPECT_EQ(Run({"CONFIG", "RESETSTAT"}), "+OK\r\n");
  EXPECT_EQ(services_.resets, 2);  // one per shard
}

TEST_F(ServerFamilyTest, CommandIntrospection) {
  // COMMAND describes the server's whole table, not the fixture's subset.
  int64_t count = static_cast<int64_t>(CommandTable::Default().all().size());
  EXPECT_EQ(Run({"COMMAND", "COUNT"}), resp::Int(count));
  std::string info = Run({"COMMAND", "INFO", "get", "nosuch"});
  EXPECT_TRUE(info.starts_with("*2\r\n*10\r\n$3\r\nget\r\n:2\r\n")) << info;
  EXPECT_TRUE(info.ends_with("*-1\r\n"));
  std::string docs = Run({"COMMAND", "DOCS", "set"});
  EXPECT_TRUE(docs.starts_with("*2\r\n$3\r\nset\r\n*10\r\n$7\r\nsummary\r\n")) << docs;
  // The argument tree redis-cli builds its hints from; commands without arguments have none.
  EXPECT_NE(docs.find("$9\r\narguments\r\n*5\r\n*4\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n"
                      "$3\r\nkey\r\n"),
            std::string::npos)
      << docs;
  EXPECT_EQ(Run({"COMMAND", "DOCS", "time"}).find("arguments"), std::string::npos);
  EXPECT_EQ(Run({"COMMAND", "BOGUS"}),
            resp::Err("ERR unknown subcommand 'BOGUS'. Try COMMAND HELP."));
  EXPECT_TRUE(Run({"COMMAND"}).starts_with("*" + std::to_string(count) + "\r\n"));
}

TEST_F(ServerFamilyTest, TimeIsNow) {
  std::string reply = Run({"TIME"});
  EXPECT_TRUE(reply.starts_with("*2\r\n$10\r\n")) << reply;
  EXPECT_EQ(Run({"TIME", "x"}), resp::Err("ERR wrong number of arguments for 'time' command"));
}

TEST_F(ServerFamilyTest, ShutdownRequestsStopWithoutReply) {
  EXPECT_EQ(Run({"SHUTDOWN", "BOGUS"}), resp::Err("ERR syntax error"));
  EXPECT_FALSE(services_.shutdown_requested);
  EXPECT_EQ(Run({"SHUTDOWN", "NOSAVE"}), "");
  EXPECT_TRUE(services_.shutdown_requested);
  EXPECT_TRUE(client().close_after_reply);
}

TEST_F(ServerFamilyTest, DebugNeedsTheSetting) {
  std::string disabled = Run({"DEBUG", "POPULATE", "10"});
  EXPECT_TRUE(disabled.starts_with("-ERR DEBUG command not allowed.")) << disabled;
  EXPECT_TRUE(Run({"DEBUG", "SLEEP", "0"}).starts_with("-ERR DEBUG command not allowed."));
}

TEST_F(ServerFamilyTest, DebugPopulateMakesRedisKeys) {
  limits().enable_debug_command = true;
  EXPECT_EQ(Run({"DEBUG", "POPULATE", "100"}), "+OK\r\n");
  // The fake services claim every key, so each shard creates all of them.
  EXPECT_EQ(store(0).Size() + store(1).Size(), 200u);
  EXPECT_EQ(Run({"GET", "key:7"}), resp::Bulk("value:7"));
  EXPECT_EQ(Run({"DEBUG", "POPULATE", "3", "p", "10"}), "+OK\r\n");
  EXPECT_EQ(Run({"GET", "p:1"}), resp::Bulk(std::string("value:1\0\0\0", 10)));
  EXPECT_EQ(Run({"DEBUG", "POPULATE", "x"}),
            resp::Err("ERR value is not an integer or out of range"));
  EXPECT_EQ(Run({"DEBUG", "SLEEP", "0"}), "+OK\r\n");
  EXPECT_EQ(Run({"DEBUG", "WHAT"}), resp::Err("ERR unknown subcommand 'WHAT'. Try DEBUG HELP."));
}

}  // namespace
}  // namespace keep::commands
