#include "dataplane/client/cluster_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/client/cluster_router.h"
#include "dataplane/client/fake_server.h"
#include "dataplane/core/slot.h"

namespace keep::client {
namespace {

namespace asio = boost::asio;
namespace bin = proto::binary;
using std::chrono::milliseconds;
using testing::FakeServer;

const core::SlotFunction kCrc16(core::SlotHash::kCrc16, "");

// A TOPOLOGY reply from a cluster whose members are the fake servers on `ports` (one endpoint
// each, the member's own port), each slot served by the port `owner(slot)` names.
std::string TopologyReply(uint32_t id, uint64_t epoch, const std::vector<uint16_t>& ports,
                          size_t self, const std::function<uint16_t(uint32_t)>& owner,
                          bool fenced = false) {
  static const std::string kHost = "127.0.0.1";
  std::vector<std::string> ids;
  // (append, not "m" + ...: g++ 12 reports a false -Wrestrict on the latter)
  for (size_t i = 0; i < ports.size(); ++i)
    ids.push_back(std::string("m").append(std::to_string(i)));
  bin::Topology t;
  t.view_epoch = epoch;
  t.flags = bin::kTopologyCluster | (fenced ? bin::kTopologyFenced : 0);
  t.self = static_cast<uint16_t>(self);
  for (size_t i = 0; i < ports.size(); ++i) {
    bin::Endpoint e{kHost, ports[i], {}};
    for (uint32_t s = 0; s < core::kSlotCount; ++s) {
      if (owner(s) != ports[i]) continue;
      if (!e.slot_ranges.empty() && e.slot_ranges.back().second + 1u == s) {
        e.slot_ranges.back().second = static_cast<uint16_t>(s);
      } else {
        e.slot_ranges.emplace_back(static_cast<uint16_t>(s), static_cast<uint16_t>(s));
      }
    }
    t.endpoints.push_back(std::move(e));
    t.members.push_back(
        {ids[i], kHost, ports[i], bin::MemberState::kUp, static_cast<uint16_t>(i), 1});
  }
  std::string out;
  bin::EncodeTopologyReply(&out, id, t);
  return out;
}

// Keys the requests of a test are about, from COMMAND's first argument or the request's key.
std::string KeyOf(const bin::RequestView& r) {
  if (r.op != bin::Op::kCommand) return std::string(r.key);
  std::vector<std::string_view> args;
  if (bin::ParseCommand(r.body, 16, &args) && args.size() > 1) return std::string(args[1]);
  return "";
}

// Answers CLUSTER KEYSLOT with `slot_function` (the member's slot hash).
bool AnswerKeyslot(const bin::RequestView& r, const core::SlotFunction& slot_function,
                   std::string* out) {
  if (r.op != bin::Op::kCommand) return false;
  std::vector<std::string_view> args;
  if (!bin::ParseCommand(r.body, 16, &args) || args.size() != 3 || args[0] != "CLUSTER") {
    return false;
  }
  bin::EncodeOk(out, r.id, ":" + std::to_string(slot_function(args[2])) + "\r\n");
  return true;
}

// Clears the servers' hooks when a test body ends. Declared after the last local its hooks
// capture, it runs before those die: the client lives until TearDown and keeps asking the
// servers for their view, so a server thread may be inside a hook while the body's locals go.
// SetHook waits for a running hook (both hold the server's lock).
class ClearHooksAtExit {
 public:
  explicit ClearHooksAtExit(std::vector<FakeServer*> servers) : servers_(std::move(servers)) {}
  ClearHooksAtExit(const ClearHooksAtExit&) = delete;
  ClearHooksAtExit& operator=(const ClearHooksAtExit&) = delete;
  ~ClearHooksAtExit() {
    for (FakeServer* s : servers_) s->SetHook({});
  }
  // For a server the test destroys itself.
  void Forget(FakeServer* server) { std::erase(servers_, server); }

 private:
  std::vector<FakeServer*> servers_;
};

size_t CountKeyRequests(FakeServer& server, std::string_view key) {
  size_t n = 0;
  for (const std::string& frame : server.frames()) {
    bin::Decoder decoder;
    bin::RequestView r;
    size_t consumed = 0;
    if (decoder.DecodeRequest(frame, &r, &consumed) == bin::DecodeStatus::kComplete &&
        r.key == key) {
      ++n;
    }
  }
  return n;
}

class ClusterClientTest : public ::testing::Test {
 protected:
  std::shared_ptr<ClusterClient> Client(std::vector<uint16_t> seed_ports,
                                        SlotMode mode = SlotMode::kCrc16,
                                        milliseconds budget = milliseconds(3000)) {
    ClusterOptions o;
    for (uint16_t p : seed_ports) o.seeds.push_back({"127.0.0.1", p});
    o.slot_mode = mode;
    o.retry_budget = budget;
    o.refresh_interval = milliseconds(10);
    o.refresh_timeout = milliseconds(500);
    o.connection.timeout = milliseconds(2000);
    client_ = ClusterClient::Create(io_, std::move(o));
    return client_;
  }

  // Runs the io_context until `start`'s handler has run.
  Result Await(const std::function<void(Handler)>& start) {
    std::optional<Result> out;
    start([&](Result r) { out = std::move(r); });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!out && std::chrono::steady_clock::now() < deadline) {
      if (io_.stopped()) io_.restart();
      io_.run_one_for(milliseconds(20));
    }
    EXPECT_TRUE(out.has_value()) << "no reply within 10 s";
    return out ? std::move(*out) : Result{};
  }

  std::optional<Error> Start() {
    std::optional<std::optional<Error>> out;
    client_->AsyncStart([&](std::optional<Error> e) { out = std::move(e); });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!out && std::chrono::steady_clock::now() < deadline) {
      if (io_.stopped()) io_.restart();
      io_.run_one_for(milliseconds(20));
    }
    EXPECT_TRUE(out.has_value()) << "AsyncStart did not finish within 10 s";
    return out ? *out : std::nullopt;
  }

  void TearDown() override {
    if (client_) client_->Close();
    io_.restart();
    io_.run_for(milliseconds(200));
  }

  asio::io_context io_;
  std::shared_ptr<ClusterClient> client_;
};

Topology Report(uint64_t epoch, uint16_t owner_port, bool fenced = false) {
  std::string frame = TopologyReply(
      1, epoch, {1000, 2000, 3000}, 0, [=](uint32_t) { return owner_port; }, fenced);
  bin::Decoder decoder;
  bin::ReplyView reply;
  size_t consumed = 0;
  EXPECT_EQ(decoder.DecodeReply(frame, &reply, &consumed), bin::DecodeStatus::kComplete);
  Topology t;
  EXPECT_TRUE(ParseTopologyBody(reply.body, &t));
  return t;
}

TEST(ChooseMajorityView, FollowsTheMostReportedSlotMapNotTheHighestEpoch) {
  // Two members agree (epochs differ: they are per member); one reports a newer, different map.
  std::vector<Topology> reports = {Report(5, 1000), Report(9, 3000), Report(7, 1000)};
  EXPECT_EQ(ChooseMajorityView(reports), 2u);  // the majority's report with the highest epoch
}

TEST(ChooseMajorityView, TiesGoToTheHighestEpochAndFencedReportsDoNotCount) {
  EXPECT_EQ(ChooseMajorityView({Report(5, 1000), Report(9, 3000)}), 1u);
  EXPECT_EQ(ChooseMajorityView({Report(5, 1000), Report(9, 3000, true), Report(8, 3000, true)}),
            0u);
  // Only fenced members answered: their view is all there is.
  EXPECT_EQ(ChooseMajorityView({Report(4, 1000, true)}), 0u);
  EXPECT_EQ(ChooseMajorityView({}), std::nullopt);
}

TEST(ClusterRouter, RoutesBySlotAndPatchesOnMoved) {
  ClusterRouter router({{"127.0.0.1", 1000}});
  // Slots below 8192 on 2000, the rest on 3000.
  std::string frame = TopologyReply(1, 3, {1000, 2000, 3000}, 0, [](uint32_t s) {
    return static_cast<uint16_t>(s < 8192 ? 2000 : 3000);
  });
  bin::Decoder decoder;
  bin::ReplyView reply;
  size_t consumed = 0;
  ASSERT_EQ(decoder.DecodeReply(frame, &reply, &consumed), bin::DecodeStatus::kComplete);
  Topology t;
  ASSERT_TRUE(ParseTopologyBody(reply.body, &t));
  bool changed = false;
  ASSERT_TRUE(router.Adopt({t}, &changed));
  EXPECT_TRUE(changed);
  router.SetSlotFunction(kCrc16);
  // Redis Cluster's documented slots: "foo" 12182, "bar" 5061.
  EXPECT_EQ(router.SlotOf("foo"), 12182);
  EXPECT_EQ(router.Route("foo"), (Endpoint{"127.0.0.1", 3000}));
  EXPECT_EQ(router.Route("bar"), (Endpoint{"127.0.0.1", 2000}));
  router.OnMoved(bin::Moved{12182, 4, 4000, "127.0.0.9"});
  EXPECT_EQ(router.Route("foo"), (Endpoint{"127.0.0.9", 4000}));
  EXPECT_EQ(router.Route("{foo}:other"), (Endpoint{"127.0.0.9", 4000}));
  // Without a slot function keys go to the members in turn.
  router.SetSlotFunction(std::nullopt);
  EXPECT_EQ(router.Route("foo").port, 1000);
  EXPECT_EQ(router.Route("foo").port, 2000);
  // The next view replaces what MOVED patched; the same view again changes nothing. Sources
  // are the members' client ports.
  router.SetSlotFunction(kCrc16);
  ASSERT_TRUE(router.Adopt({t}, &changed));
  EXPECT_TRUE(changed);
  EXPECT_EQ(router.Route("foo"), (Endpoint{"127.0.0.1", 3000}));
  ASSERT_TRUE(router.Adopt({t}, &changed));
  EXPECT_FALSE(changed);
  EXPECT_EQ(router.TopologySources().size(), 3u);
}

TEST_F(ClusterClientTest, SendsEachKeyToItsSlotsOwner) {
  FakeServer a({}), b({});
  std::vector<uint16_t> ports = {a.port(), b.port()};
  auto owner = [&](uint32_t s) { return s < 8192 ? a.port() : b.port(); };
  for (FakeServer* s : {&a, &b}) {
    size_t self = s == &a ? 0 : 1;
    s->SetHook([&, self](const bin::RequestView& r, std::string* out) {
      if (r.op != bin::Op::kTopology) return false;
      *out = TopologyReply(r.id, 2, ports, self, owner);
      return true;
    });
  }
  ClearHooksAtExit hooks_cleared({&a, &b});
  auto client = Client({a.port()});
  ASSERT_FALSE(Start());
  ASSERT_TRUE(Await([&](Handler h) { client->AsyncSet("foo", "1", 0, 0, h); }).ok());
  ASSERT_TRUE(Await([&](Handler h) { client->AsyncSet("bar", "2", 0, 0, h); }).ok());
  Result r = Await([&](Handler h) { client->AsyncGet("foo", h); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.body, "1");
  EXPECT_EQ(CountKeyRequests(b, "foo"), 2u);  // slot 12182
  EXPECT_EQ(CountKeyRequests(a, "foo"), 0u);
  EXPECT_EQ(CountKeyRequests(a, "bar"), 1u);  // slot 5061
  EXPECT_EQ(client->stats().moved, 0u);
  // Both members were asked for their view.
  EXPECT_GE(client->stats().refreshes, 2u);
  EXPECT_EQ(client->router().view().members.size(), 2u);
}

TEST_F(ClusterClientTest, FollowsMovedThenGoesStraightToTheNewOwner) {
  FakeServer a({}), b({});
  std::vector<uint16_t> ports = {a.port(), b.port()};
  const uint32_t moved_slot = kCrc16("foo");
  std::atomic<bool> moved{false};  // once A has redirected, every view sends the slot to B
  auto owner = [&](uint32_t s) { return s == moved_slot && moved ? b.port() : a.port(); };
  a.SetHook([&](const bin::RequestView& r, std::string* out) {
    if (r.op == bin::Op::kTopology) {
      *out = TopologyReply(r.id, moved ? 3 : 2, ports, 0, owner);
      return true;
    }
    if (KeyOf(r) == "foo") {
      moved = true;
      bin::EncodeMoved(out, r.id, static_cast<uint16_t>(moved_slot), 3, "127.0.0.1", b.port());
      return true;
    }
    return false;
  });
  b.SetHook([&](const bin::RequestView& r, std::string* out) {
    if (r.op != bin::Op::kTopology) return false;
    *out = TopologyReply(r.id, moved ? 3 : 2, ports, 1, owner);
    return true;
  });
  ClearHooksAtExit hooks_cleared({&a, &b});
  auto client = Client({a.port(), b.port()});
  ASSERT_FALSE(Start());
  ASSERT_TRUE(Await([&](Handler h) { client->AsyncSet("foo", "v", 0, 0, h); }).ok());
  EXPECT_EQ(client->stats().moved, 1u);
  for (int i = 0; i < 5; ++i) {
    Result r = Await([&](Handler h) { client->AsyncGet("foo", h); });
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.body, "v");
  }
  EXPECT_EQ(client->stats().moved, 1u);
  EXPECT_EQ(CountKeyRequests(a, "foo"), 1u);
  EXPECT_EQ(CountKeyRequests(b, "foo"), 6u);
}

TEST_F(ClusterClientTest, RedirectLoopsGiveUpAsUnavailable) {
  FakeServer a({});
  std::vector<uint16_t> ports = {a.port()};
  a.SetHook([&](const bin::RequestView& r, std::string* out) {
    if (r.op == bin::Op::kTopology) {
      *out = TopologyReply(r.id, 2, ports, 0, [&](uint32_t) { return a.port(); });
      return true;
    }
    if (KeyOf(r) == "loop") {  // a member that keeps sending the client back to itself
      bin::EncodeMoved(out, r.id, static_cast<uint16_t>(kCrc16("loop")), 2, "127.0.0.1", a.port());
      return true;
    }
    return false;
  });
  ClearHooksAtExit hooks_cleared({&a});
  auto client = Client({a.port()});
  ASSERT_FALSE(Start());
  Result r = Await([&](Handler h) { client->AsyncGet("loop", h); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind(), ErrorKind::kUnavailable);
  EXPECT_EQ(r.error->status(), Status::kMoved);
  EXPECT_EQ(client->stats().moved, 16u);
  EXPECT_EQ(client->stats().unavailable, 1u);
  // The client goes on serving other keys.
  EXPECT_TRUE(Await([&](Handler h) { client->AsyncSet("other", "x", 0, 0, h); }).ok());
}

TEST_F(ClusterClientTest, BusyWaitsAtLeastTheServersRetryAfter) {
  FakeServer a({});
  std::vector<uint16_t> ports = {a.port()};
  std::atomic<int> busy_left{2};
  a.SetHook([&](const bin::RequestView& r, std::string* out) {
    if (r.op == bin::Op::kTopology) {
      *out = TopologyReply(r.id, 2, ports, 0, [&](uint32_t) { return a.port(); });
      return true;
    }
    if (r.op == bin::Op::kLock && busy_left > 0) {
      --busy_left;
      bin::EncodeBusy(out, r.id, 300);  // a lock quarantine's remaining time
      return true;
    }
    return false;
  });
  ClearHooksAtExit hooks_cleared({&a});
  auto client = Client({a.port()});
  ASSERT_FALSE(Start());
  auto t0 = std::chrono::steady_clock::now();
  Result r = Await([&](Handler h) { client->AsyncLock("L", "me", 1000, h); });
  auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r.ok()) << r.error->message();
  EXPECT_GE(elapsed, milliseconds(600));
  EXPECT_EQ(client->stats().busy_retries, 2u);
}

TEST_F(ClusterClientTest, BusyBeyondTheBudgetFailsAsUnavailable) {
  FakeServer a({});
  std::vector<uint16_t> ports = {a.port()};
  a.SetHook([&](const bin::RequestView& r, std::string* out) {
    if (r.op != bin::Op::kTopology) return false;
    *out = TopologyReply(r.id, 2, ports, 0, [&](uint32_t) { return a.port(); });
    return true;
  });
  ClearHooksAtExit hooks_cleared({&a});
  auto client = Client({a.port()}, SlotMode::kCrc16, milliseconds(300));
  ASSERT_FALSE(Start());
  auto t0 = std::chrono::steady_clock::now();
  Result r = Await([&](Handler h) { client->AsyncGet("stuck-key", h); });  // always BUSY
  auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind(), ErrorKind::kUnavailable);
  EXPECT_EQ(r.error->status(), Status::kBusy);
  EXPECT_NE(r.error->message().find("retry budget"), std::string::npos) << r.error->message();
  EXPECT_LE(elapsed, milliseconds(1000));
  EXPECT_GT(client->stats().busy_retries, 3u);
}

TEST_F(ClusterClientTest, FollowsTheMajorityViewNotTheSeeds) {
  // A and B agree that A serves every slot; C, the only seed, claims them all with a newer epoch.
  FakeServer a({}), b({}), c({});
  std::vector<uint16_t> ports = {a.port(), b.port(), c.port()};
  for (FakeServer* s : {&a, &b, &c}) {
    size_t self = s == &a ? 0 : s == &b ? 1 : 2;
    uint16_t claimed = s == &c ? c.port() : a.port();
    uint64_t epoch = s == &c ? 50 : 4;
    s->SetHook([&, self, claimed, epoch](const bin::RequestView& r, std::string* out) {
      if (r.op != bin::Op::kTopology) return false;
      *out = TopologyReply(r.id, epoch, ports, self, [=](uint32_t) { return claimed; });
      return true;
    });
  }
  ClearHooksAtExit hooks_cleared({&a, &b, &c});
  auto client = Client({c.port()});
  ASSERT_FALSE(Start());
  EXPECT_EQ(client->router().view().view_epoch, 4u);
  ASSERT_TRUE(Await([&](Handler h) { client->AsyncSet("k", "v", 0, 0, h); }).ok());
  EXPECT_EQ(CountKeyRequests(a, "k"), 1u);
  EXPECT_EQ(CountKeyRequests(c, "k"), 0u);
}

TEST_F(ClusterClientTest, ALostMemberIsRefreshedAwayFrom) {
  FakeServer a({});
  auto b = std::make_unique<FakeServer>(FakeServer::Options{});
  std::vector<uint16_t> ports = {a.port(), b->port()};
  const uint16_t b_port = b->port();
  std::atomic<bool> b_gone{false};
  auto owner = [&](uint32_t) { return b_gone ? a.port() : b_port; };
  auto hook = [&](size_t self) {
    return [&, self](const bin::RequestView& r, std::string* out) {
      if (r.op != bin::Op::kTopology) return false;
      *out = TopologyReply(r.id, b_gone ? 3 : 2, ports, self, owner);
      return true;
    };
  };
  a.SetHook(hook(0));
  b->SetHook(hook(1));
  ClearHooksAtExit hooks_cleared({&a, b.get()});
  auto client = Client({a.port()});
  ASSERT_FALSE(Start());
  ASSERT_TRUE(Await([&](Handler h) { client->AsyncSet("k", "1", 0, 0, h); }).ok());
  b_gone = true;
  hooks_cleared.Forget(b.get());
  b.reset();  // its connections close and its port refuses
  Result r = Await([&](Handler h) { client->AsyncSet("k", "2", 0, 0, h); });
  ASSERT_TRUE(r.ok()) << r.error->message();
  EXPECT_GE(client->stats().connection_retries, 1u);
  EXPECT_GE(client->stats().view_changes, 1u);
  EXPECT_EQ(CountKeyRequests(a, "k"), 1u);
}

TEST_F(ClusterClientTest, FencedIsRetriedUntilTheMemberServes) {
  FakeServer a({});
  std::vector<uint16_t> ports = {a.port()};
  std::atomic<int> fenced_left{3};
  a.SetHook([&](const bin::RequestView& r, std::string* out) {
    if (r.op == bin::Op::kTopology) {
      *out = TopologyReply(
          r.id, 2, ports, 0, [&](uint32_t) { return a.port(); }, fenced_left > 0);
      return true;
    }
    if (r.op == bin::Op::kGet && fenced_left > 0) {
      --fenced_left;
      bin::EncodeErrorText(out, r.id, bin::Status::kFenced, "CLUSTERDOWN The cluster is down");
      return true;
    }
    return false;
  });
  ClearHooksAtExit hooks_cleared({&a});
  auto client = Client({a.port()});
  ASSERT_FALSE(Start());
  Result r = Await([&](Handler h) { client->AsyncGet("k", h); });
  ASSERT_TRUE(r.ok()) << r.error->message();
  EXPECT_EQ(r.status, Status::kNil);
  EXPECT_EQ(client->stats().fenced_retries, 3u);
}

TEST_F(ClusterClientTest, DetectsTheSlotFunctionWithClusterKeyslot) {
  const std::string secret = "cluster-secret";
  const core::SlotFunction keyed(core::SlotHash::kKeyed, secret);
  struct Case {
    const core::SlotFunction* server;
    std::string client_secret;
    SlotMode expected;
  };
  for (const Case& c :
       {Case{&keyed, secret, SlotMode::kKeyed}, Case{&kCrc16, secret, SlotMode::kCrc16},
        Case{&keyed, "not-the-secret", SlotMode::kNone}}) {
    FakeServer a({});
    std::vector<uint16_t> ports = {a.port()};
    a.SetHook([&](const bin::RequestView& r, std::string* out) {
      if (r.op == bin::Op::kTopology) {
        *out = TopologyReply(r.id, 2, ports, 0, [&](uint32_t) { return a.port(); });
        return true;
      }
      return AnswerKeyslot(r, *c.server, out);
    });
    ClearHooksAtExit hooks_cleared({&a});
    ClusterOptions o;
    o.seeds = {{"127.0.0.1", a.port()}};
    o.slot_secret = c.client_secret;
    client_ = ClusterClient::Create(io_, o);
    ASSERT_FALSE(Start());
    EXPECT_EQ(client_->slot_mode(), c.expected) << c.client_secret;
    EXPECT_EQ(client_->router().places_keys(), c.expected != SlotMode::kNone);
    // Either way the key is served.
    ASSERT_TRUE(Await([&](Handler h) { client_->AsyncSet("k", "v", 0, 0, h); }).ok());
    client_->Close();
    io_.restart();
    io_.run_for(milliseconds(50));
  }
}

TEST_F(ClusterClientTest, NoReachableSeedFailsTheStartAndTheRequests) {
  uint16_t dead_port = 0;
  {
    FakeServer gone({});
    dead_port = gone.port();
  }
  auto client = Client({dead_port});
  std::optional<Result> queued;
  client->AsyncGet("k", [&](Result r) { queued = std::move(r); });
  std::optional<Error> e = Start();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind(), ErrorKind::kConnection);
  EXPECT_NE(e->message().find("no seed answered TOPOLOGY"), std::string::npos) << e->message();
  ASSERT_TRUE(queued.has_value());
  EXPECT_EQ(queued->error->kind(), ErrorKind::kConnection);
}

TEST_F(ClusterClientTest, ASingleNodeIsServedToo) {
  FakeServer a({});  // its TOPOLOGY is a single node's: one endpoint with every slot
  auto client = Client({a.port()}, SlotMode::kDetect);
  ASSERT_FALSE(Start());
  EXPECT_FALSE(client->router().view().cluster);
  ASSERT_TRUE(Await([&](Handler h) { client->AsyncSet("k", "v", 0, 0, h); }).ok());
  Result r = Await([&](Handler h) { client->AsyncGet("k", h); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.body, "v");
  EXPECT_EQ(Await([&](Handler h) { client->AsyncPing(h); }).body, "PONG");
  // Ordinary server errors are returned as they are, not retried.
  r = Await([&](Handler h) { client->AsyncCommand({"NOSUCH", "k"}, h); });
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.body.substr(0, 4), "-ERR");
}

}  // namespace
}  // namespace keep::client
