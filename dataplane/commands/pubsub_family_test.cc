#include <gtest/gtest.h>

#include "dataplane/commands/fake_services.h"
#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

class PubSubFamilyTest : public CommandFixture {
 protected:
  PubSubFamilyTest() : CommandFixture(2, {PubSubCommands(), ConnectionCommands()}) {
    set_services(&services_);
  }
  FakeServices services_;
};

TEST_F(PubSubFamilyTest, SubscribeConfirmsEachChannelWithTheRunningCount) {
  EXPECT_EQ(Run({"SUBSCRIBE", "a", "b", "a"}),
            "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
            "*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n"
            "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:2\r\n");
  EXPECT_EQ(services_.subscribers.size(), 2u);
  EXPECT_EQ(Run({"PSUBSCRIBE", "x*"}), "*3\r\n$10\r\npsubscribe\r\n$2\r\nx*\r\n:3\r\n");
  // Shard channels are counted apart.
  EXPECT_EQ(Run({"SSUBSCRIBE", "s"}), "*3\r\n$10\r\nssubscribe\r\n$1\r\ns\r\n:1\r\n");
  EXPECT_TRUE(client().Subscribed());
}

TEST_F(PubSubFamilyTest, UnsubscribeAllAndNothingLeft) {
  Run({"SUBSCRIBE", "a", "b"});
  std::string all = Run({"UNSUBSCRIBE"});
  EXPECT_EQ(all,
            "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n"
            "*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n");
  EXPECT_TRUE(services_.subscribers.empty());
  EXPECT_EQ(Run({"UNSUBSCRIBE"}), "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n");
  EXPECT_EQ(RunResp3({"UNSUBSCRIBE"}), ">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n");
  EXPECT_EQ(Run({"UNSUBSCRIBE", "never"}), "*3\r\n$11\r\nunsubscribe\r\n$5\r\nnever\r\n:0\r\n");
  EXPECT_FALSE(client().Subscribed());
}

TEST_F(PubSubFamilyTest, PublishSumsReceiversOverShards) {
  Run({"SUBSCRIBE", "news"});
  // Each of the two shards reports the fake's one subscriber.
  EXPECT_EQ(Run({"PUBLISH", "news", "m"}), ":2\r\n");
  EXPECT_EQ(Run({"PUBLISH", "quiet", "m"}), ":0\r\n");
  EXPECT_EQ(Run({"SPUBLISH", "news", "m"}), ":0\r\n");
}

TEST_F(PubSubFamilyTest, PubSubIntrospectionDeduplicatesShards) {
  Run({"SUBSCRIBE", "a", "b"});
  Run({"PSUBSCRIBE", "p*"});
  EXPECT_EQ(Run({"PUBSUB", "CHANNELS"}), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  EXPECT_EQ(Run({"PUBSUB", "CHANNELS", "b*"}), "*1\r\n$1\r\nb\r\n");
  EXPECT_EQ(Run({"PUBSUB", "NUMPAT"}), ":1\r\n");
  EXPECT_EQ(Run({"PUBSUB", "NUMSUB", "a", "z"}), "*4\r\n$1\r\na\r\n:2\r\n$1\r\nz\r\n:0\r\n");
  EXPECT_EQ(Run({"PUBSUB", "NOPE"}), resp::Err("ERR unknown subcommand 'NOPE'. Try PUBSUB HELP."));
  EXPECT_EQ(Run({"PUBSUB", "NUMPAT", "x"}),
            resp::Err("ERR wrong number of arguments for 'pubsub|numpat' command"));
  EXPECT_EQ(Run({"PUBSUB", "CHANNELS", "a", "b"}),
            resp::Err("ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try "
                      "PUBSUB HELP."));
}

TEST_F(PubSubFamilyTest, SubscribedResp2PingAndReset) {
  Run({"SUBSCRIBE", "a"});
  EXPECT_EQ(Run({"PING"}), "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
  EXPECT_EQ(Run({"PING", "x"}), "*2\r\n$4\r\npong\r\n$1\r\nx\r\n");
  EXPECT_EQ(Run({"RESET"}), "+RESET\r\n");
  EXPECT_FALSE(client().Subscribed());
  EXPECT_TRUE(services_.subscribers.empty());
  EXPECT_EQ(Run({"PING"}), "+PONG\r\n");
}

TEST_F(PubSubFamilyTest, Arity) {
  EXPECT_EQ(Run({"SUBSCRIBE"}), resp::Err("ERR wrong number of arguments for 'subscribe' command"));
  EXPECT_EQ(Run({"PUBLISH", "a"}),
            resp::Err("ERR wrong number of arguments for 'publish' command"));
}

}  // namespace
}  // namespace keep::commands
