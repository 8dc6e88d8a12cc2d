#include <gtest/gtest.h>

#include "dataplane/cluster/view.h"
#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

// Two members: "a" (this one, 2 shards with shard ports 7100-7101) owns slots below 8192, "b"
// (1 shard, no shard ports) the rest.
std::unique_ptr<cluster::View> TwoMembers() {
  auto view = std::make_unique<cluster::View>();
  view->epoch = 7;
  view->self = 0;
  cluster::ViewMember a, b;
  a.member = {"a", "10.0.0.1", 7000, 7001, 2, 7100};
  a.state = cluster::MemberState::kUp;
  b.member = {"b", "10.0.0.2", 7000, 7001, 1, 0};
  b.state = cluster::MemberState::kUp;
  cluster::FillEndpoints(&a);
  cluster::FillEndpoints(&b);
  view->members = {a, b};
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    view->owner[slot] = slot < 8192 ? 0 : 1;
    view->phase[slot] = slot < 8192 ? cluster::SlotPhase::kOwned : cluster::SlotPhase::kNotOwned;
  }
  view->members[0].slots_owned = 8192;
  view->members[1].slots_owned = 8192;
  return view;
}

class ClusterFamilyTest : public CommandFixture {
 protected:
  ClusterFamilyTest() : CommandFixture(2, {StringCommands(), ClusterCommands()}) {}
};

TEST_F(ClusterFamilyTest, DisabledOnASingleNode) {
  EXPECT_EQ(Run({"CLUSTER", "INFO"}), "-ERR This instance has cluster support disabled\r\n");
  EXPECT_EQ(Run({"CLUSTER", "KEYSLOT", "x"}),
            "-ERR This instance has cluster support disabled\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", "1"}),
            "-ERR This instance has cluster support disabled\r\n");
}

TEST_F(ClusterFamilyTest, DescribesEveryShardAsANode) {
  auto view = TwoMembers();
  set_view(view.get());
  // CRC16 (the fixture's slot function): Redis's example key.
  EXPECT_EQ(Run({"CLUSTER", "KEYSLOT", "123456789"}), ":12739\r\n");
  EXPECT_EQ(Run({"cluster", "keyslot", "{user1000}.following"}),
            Run({"CLUSTER", "KEYSLOT", "user1000"}));
  std::string info = Run({"CLUSTER", "INFO"});
  EXPECT_NE(info.find("cluster_state:ok\r\n"), std::string::npos);
  EXPECT_NE(info.find("cluster_known_nodes:3\r\n"), std::string::npos);
  EXPECT_NE(info.find("cluster_current_epoch:7\r\n"), std::string::npos);
  std::string nodes = Run({"CLUSTER", "NODES"});
  EXPECT_NE(nodes.find(" 10.0.0.1:7100@7001 myself,master - 0 0 7 connected 0 2 4 "),
            std::string::npos)
      << nodes;
  EXPECT_NE(nodes.find(" 10.0.0.1:7101@7001 master - 0 0 7 connected 1 3 5 "), std::string::npos);
  EXPECT_NE(nodes.find(" 10.0.0.2:7000@7001 master - 0 0 7 connected 8192-16383\n"),
            std::string::npos);
  std::string myid = Run({"CLUSTER", "MYID"});
  EXPECT_EQ(myid, "$40\r\n" + view->members[0].node_ids[0] + "\r\n");
  std::string slots = Run({"CLUSTER", "SLOTS"});
  EXPECT_EQ(slots.substr(0, 7), "*8193\r\n");  // 8192 one-slot ranges on a, one range on b
  EXPECT_NE(slots.find("*3\r\n:8192\r\n:16383\r\n*4\r\n$8\r\n10.0.0.2\r\n:7000\r\n$40\r\n"),
            std::string::npos);
  std::string shards = Run({"CLUSTER", "SHARDS"});
  EXPECT_EQ(shards.substr(0, 4), "*3\r\n");
  EXPECT_NE(shards.find("$6\r\nhealth\r\n$6\r\nonline\r\n"), std::string::npos);
}

TEST_F(ClusterFamilyTest, FencedClusterReportsFail) {
  auto view = TwoMembers();
  view->fenced = true;
  set_view(view.get());
  EXPECT_NE(Run({"CLUSTER", "INFO"}).find("cluster_state:fail"), std::string::npos);
}

TEST_F(ClusterFamilyTest, CountsKeysInASlotOnItsShard) {
  auto view = TwoMembers();
  set_view(view.get());
  for (int i = 0; i < 5; ++i) Run({"SET", "{tag}:" + std::to_string(i), "v"});
  Run({"SET", "other", "v"});
  std::string slot = Run({"CLUSTER", "KEYSLOT", "tag"});
  slot = slot.substr(1, slot.size() - 3);
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", slot}), ":5\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", "0"}), ":0\r\n");
}

TEST_F(ClusterFamilyTest, BadInput) {
  auto view = TwoMembers();
  set_view(view.get());
  EXPECT_EQ(Run({"CLUSTER"}), "-ERR wrong number of arguments for 'cluster' command\r\n");
  EXPECT_EQ(Run({"CLUSTER", "KEYSLOT"}),
            "-ERR wrong number of arguments for 'cluster|keyslot' command\r\n");
  EXPECT_EQ(Run({"CLUSTER", "INFO", "x"}),
            "-ERR wrong number of arguments for 'cluster|info' command\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", "abc"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", "16384"}), "-ERR Invalid slot\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", "-1"}), "-ERR Invalid slot\r\n");
  EXPECT_EQ(Run({"CLUSTER", "BOGUS\xff"}).substr(0, 28), "-ERR unknown subcommand 'BOG");
  EXPECT_EQ(Run({"CLUSTER", "HELP"}).substr(0, 5), "*17\r\n");
}

}  // namespace
}  // namespace keep::commands
