#include "dataplane/cluster/cluster_control.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace keep::cluster {
namespace {

namespace asio = boost::asio;

int FreeUdpPort() {
  asio::io_context io;
  asio::ip::udp::socket s(io, asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return s.local_endpoint().port();
}

class ClusterControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    peer_port_ = FreeUdpPort();
    ClusterOptions options;
    std::string error = ParseInlineMembers("a@127.0.0.1:7000:" + std::to_string(peer_port_) + ":1",
                                           &options.members);
    ASSERT_EQ(error, "");
    options.self_id = "a";
    options.incarnation = 1234;
    options.peer_secret = "peer-secret";
    options.cluster_secret = "cluster-secret";
    options.bind_address = "127.0.0.1";
    options.max_lock_ttl_ms = 1000;
    control_ = std::make_unique<ClusterControl>(io_, options, &views_);
    ASSERT_EQ(control_->Start(), "");
    token_ = "Bearer " + HmacSha256Hex("peer-secret", "keep-admin");
  }
  void TearDown() override {
    control_->Stop();
    io_.run_for(std::chrono::milliseconds(20));
  }
  AdminResponse Call(std::string method, std::string target, std::string auth = "",
                     std::string body = "") {
    return control_->HandleAdmin(AdminRequest{method, target, auth, body});
  }

  asio::io_context io_;
  ViewPublisher views_{1};
  std::unique_ptr<ClusterControl> control_;
  int peer_port_ = 0;
  std::string token_;
};

TEST_F(ClusterControlTest, StartsFencedThenServesAlone) {
  EXPECT_TRUE(views_.current()->fenced);
  EXPECT_EQ(Call("GET", "/readyz").status, 503);
  io_.run_for(std::chrono::milliseconds(200));
  const View* view = views_.current();
  EXPECT_FALSE(view->fenced);
  EXPECT_EQ(RouteSlot(*view, 123), SlotRoute::kServe);
  AdminResponse ready = Call("GET", "/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;
  auto body = nlohmann::json::parse(Call("GET", "/v1/cluster").body);
  EXPECT_EQ(body["member_id"], "a");
  EXPECT_EQ(body["incarnation"], 1234u);
  EXPECT_EQ(body["phase"], "serving");
  EXPECT_EQ(body["fenced"], false);
  EXPECT_EQ(body["slots_owned"], core::kSlotCount);
  EXPECT_EQ(body["members"][0]["state"], "up");
  EXPECT_EQ(body["members"][0]["slots"], core::kSlotCount);
  EXPECT_EQ(body["handoff"]["in_flight"], 0);
  EXPECT_EQ(Call("GET", "/healthz").status, 200);
  AdminResponse metrics = Call("GET", "/metrics");
  EXPECT_NE(metrics.body.find("# TYPE keep_cluster_view_epoch gauge"), std::string::npos);
  EXPECT_NE(metrics.body.find("keep_cluster_member_up{member=\"a\"} 1"), std::string::npos);
  EXPECT_EQ(Call("GET", "/nope").status, 404);
  EXPECT_EQ(Call("DELETE", "/v1/cluster").status, 405);
}

TEST_F(ClusterControlTest, MutationsNeedTheTokenAndOneChange) {
  io_.run_for(std::chrono::milliseconds(150));
  std::string list =
      "{\"version\": 2, \"members\": [{\"id\": \"a\", \"host\": \"127.0.0.1\", "
      "\"client_port\": 7000, \"peer_port\": " +
      std::to_string(peer_port_) + "}";
  std::string add_b = list +
                      ", {\"id\": \"b\", \"host\": \"127.0.0.2\", \"client_port\": 7000, "
                      "\"peer_port\": 7001}]}";
  std::string add_bc = list +
                       ", {\"id\": \"b\", \"host\": \"127.0.0.2\", \"client_port\": 7000, "
                       "\"peer_port\": 7001}, {\"id\": \"c\", \"host\": \"127.0.0.3\", "
                       "\"client_port\": 7000, \"peer_port\": 7001}]}";
  EXPECT_EQ(Call("PUT", "/v1/members", "", add_b).status, 401);
  EXPECT_EQ(Call("PUT", "/v1/members", "Bearer wrong", add_b).status, 401);
  EXPECT_EQ(Call("POST", "/v1/leave", "").status, 401);
  EXPECT_EQ(Call("PUT", "/v1/members", token_, "{not json").status, 400);
  AdminResponse two = Call("PUT", "/v1/members", token_, add_bc);
  EXPECT_EQ(two.status, 409);
  EXPECT_NE(two.body.find("one member at a time"), std::string::npos);
  EXPECT_EQ(control_->rejections().unauthorized, 3u);
  // The cluster is unharmed by all that.
  EXPECT_EQ(Call("GET", "/readyz").status, 200);
  // A second member that is not heard: this member loses its majority (1 of 2).
  EXPECT_EQ(Call("PUT", "/v1/members", token_, add_b).status, 200);
  io_.run_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(views_.current()->fenced);
  EXPECT_EQ(Call("GET", "/readyz").status, 503);
}

TEST_F(ClusterControlTest, LeaveWithoutHandoffFinishesWhenNoSlotsAreOwned) {
  io_.run_for(std::chrono::milliseconds(150));
  AdminResponse leave = Call("POST", "/v1/leave", token_);
  EXPECT_EQ(leave.status, 202);
  EXPECT_NE(leave.body.find("leaving"), std::string::npos);
  io_.run_for(std::chrono::milliseconds(250));
  EXPECT_EQ(control_->Phase(), "left");
  EXPECT_TRUE(control_->left());
  // Alone and gone: nobody owns the slots, so keys answer CLUSTERDOWN rather than a MOVED loop.
  EXPECT_EQ(RouteSlot(*views_.current(), 1), SlotRoute::kFenced);
}

}  // namespace
}  // namespace keep::cluster

namespace keep::cluster {
namespace {

// Two members in one io_context, one named by DNS ("localhost"): they hear each other, agree,
// and when one stops the other fences itself (1 of 2 is no majority).
TEST(ClusterControlPair, HearEachOtherThroughDnsNamesAndFenceWhenAlone) {
  boost::asio::io_context io;
  int port_a = FreeUdpPort();
  int port_b = FreeUdpPort();
  MemberList list;
  ASSERT_EQ(ParseInlineMembers("a@127.0.0.1:7000:" + std::to_string(port_a) +
                                   ":1,b@localhost:7002:" + std::to_string(port_b) + ":1",
                               &list),
            "");
  auto options = [&](const char* id, uint64_t incarnation) {
    ClusterOptions o;
    o.members = list;
    o.self_id = id;
    o.incarnation = incarnation;
    o.peer_secret = "p";
    o.cluster_secret = "c";
    o.bind_address = "127.0.0.1";
    return o;
  };
  ViewPublisher views_a(1), views_b(1);
  ClusterControl a(io, options("a", 1), &views_a);
  ClusterControl b(io, options("b", 2), &views_b);
  ASSERT_EQ(a.Start(), "");
  ASSERT_EQ(b.Start(), "");
  io.run_for(std::chrono::milliseconds(300));
  ASSERT_FALSE(views_a.current()->fenced);
  ASSERT_FALSE(views_b.current()->fenced);
  EXPECT_EQ(a.Phase(), "serving");
  EXPECT_EQ(views_a.current()->owner, views_b.current()->owner);
  EXPECT_EQ(views_a.current()->members[1].state, MemberState::kUp);
  EXPECT_EQ(views_a.current()->members[1].incarnation, 2u);
  b.Stop();
  io.run_for(std::chrono::milliseconds(350));
  EXPECT_TRUE(views_a.current()->fenced);
  EXPECT_EQ(views_a.current()->members[1].state, MemberState::kDown);
  a.Stop();
  io.run_for(std::chrono::milliseconds(10));
}

}  // namespace
}  // namespace keep::cluster
