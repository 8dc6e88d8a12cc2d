#include "dataplane/client/keep_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/client/fake_server.h"

namespace keep::client {
namespace {

namespace bin = proto::binary;
using testing::FakeServer;

FakeServer::Options Fake(std::string secret = "", bool reverse = false) {
  FakeServer::Options o;
  o.secret = std::move(secret);
  o.reverse_replies = reverse;
  return o;
}

SetOptions SetOpts(uint64_t ttl_ms, bool nx) {
  SetOptions o;
  o.ttl_ms = ttl_ms;
  o.nx = nx;
  return o;
}

Options OptionsFor(const FakeServer& server) {
  Options o;
  o.port = server.port();
  o.timeout = std::chrono::milliseconds(2000);
  return o;
}

std::map<std::string, std::string> LoadVectors() {
  std::ifstream in(KEEP_PROTO_DIR "/binary_test_vectors.txt");
  std::map<std::string, std::string> vectors;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, hex, bytes;
    fields >> name >> hex;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
      bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    vectors[name] = bytes;
  }
  return vectors;
}

// The frame with its id field replaced, so a vector can be compared with what libkeep sent.
std::string WithId(std::string frame, uint32_t id) {
  for (int i = 0; i < 4; ++i) frame[4 + i] = static_cast<char>(id >> (8 * i));
  return frame;
}

TEST(KeepClient, SendsTheVectorBytes) {
  FakeServer server(Fake());
  auto vectors = LoadVectors();
  ASSERT_FALSE(vectors.empty());
  SyncClient client(OptionsFor(server));
  client.Get("foo");
  client.Set("foo", "bar", SetOpts(1500, true));
  client.Incr("ctr", -2, 60000);
  client.Command({"ECHO", "hi"});
  auto frames = server.frames();
  ASSERT_EQ(frames.size(), 5u);  // HELLO first
  EXPECT_EQ(frames[0][8], static_cast<char>(bin::Op::kHello));
  EXPECT_EQ(frames[1], WithId(vectors["req_get"], 2));
  EXPECT_EQ(frames[2], WithId(vectors["req_set_px_nx"], 3));
  EXPECT_EQ(frames[3], WithId(vectors["req_incr"], 4));
  EXPECT_EQ(frames[4], WithId(vectors["req_command"], 5));
}

TEST(KeepClient, TypedCalls) {
  FakeServer server(Fake());
  SyncClient client(OptionsFor(server));
  EXPECT_EQ(client.Ping(), "PONG");
  EXPECT_EQ(client.Get("k"), std::nullopt);
  EXPECT_TRUE(client.Set("k", std::string("v\0v", 3)));
  EXPECT_EQ(client.Get("k"), std::string("v\0v", 3));
  EXPECT_FALSE(client.Set("k", "w", SetOpts(0, true)));
  EXPECT_TRUE(client.Exists("k"));
  EXPECT_EQ(client.Del("k"), 1);
  EXPECT_EQ(client.Del("k"), 0);
  EXPECT_EQ(client.Incr("n", 5), 5);
  EXPECT_EQ(client.Incr("n", -7), -2);
  EXPECT_EQ(client.Lock("l", "a", 1000), 1);
  EXPECT_EQ(client.Lock("l", "b", 1000), std::nullopt);
  EXPECT_FALSE(client.Unlock("l", "b"));
  EXPECT_TRUE(client.Unlock("l", "a"));
  ThrottleResult t = client.Throttle("t", 15, 30, 60);
  EXPECT_FALSE(t.limited);
  EXPECT_EQ(t.remaining, 15);
  FixedWindowResult w = client.FixedWindow("w", 100, 1000);
  EXPECT_TRUE(w.allowed);
  EXPECT_EQ(w.remaining, 99);
  EXPECT_EQ(client.Command({"PING"}), "+PONG\r\n");
  EXPECT_EQ(client.Command({"NOPE"}).substr(0, 20), "-ERR unknown command");
}

TEST(KeepClient, ErrorsCarryStatusAndMessage) {
  FakeServer server(Fake());
  SyncClient client(OptionsFor(server));
  client.Set("s", "abc");
  try {
    client.Incr("s");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kServer);
    EXPECT_EQ(e.status(), Status::kError);
    EXPECT_EQ(e.message(), "ERR value is not an integer or out of range");
  }
  try {
    client.Get("moved");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kMoved);
    EXPECT_EQ(e.message(), "MOVED 1234 10.0.0.9:7002 (view epoch 3)");
  }
}

TEST(KeepClient, Topology) {
  FakeServer server(Fake());
  SyncClient client(OptionsFor(server));
  Topology t = client.Topology();
  EXPECT_FALSE(t.cluster);
  EXPECT_EQ(t.view_epoch, 0u);
  ASSERT_EQ(t.members.size(), 1u);
  EXPECT_EQ(t.members[0].endpoint_count, 1u);
  ASSERT_EQ(t.endpoints.size(), 1u);
  EXPECT_EQ(t.EndpointFor(0), (Endpoint{"127.0.0.1", server.port()}));
  EXPECT_EQ(t.EndpointFor(16383), (Endpoint{"127.0.0.1", server.port()}));

  // The spec's vector: two members, the second down, half the slots each.
  auto vectors = LoadVectors();
  std::string_view frame = vectors["rep_topology"];
  ASSERT_GT(frame.size(), bin::kFrameHeaderSize);
  std::string_view body = frame.substr(bin::kFrameHeaderSize);
  ASSERT_TRUE(ParseTopologyBody(body, &t));
  EXPECT_TRUE(t.cluster);
  EXPECT_FALSE(t.fenced);
  EXPECT_EQ(t.view_epoch, 7u);
  ASSERT_EQ(t.members.size(), 2u);
  EXPECT_EQ(t.members[1].id, "b");
  EXPECT_EQ(t.members[1].state, bin::MemberState::kDown);
  EXPECT_EQ(t.EndpointFor(8191), (Endpoint{"10.0.0.1", 7101}));
  EXPECT_EQ(t.EndpointFor(8192), (Endpoint{"10.0.0.2", 7201}));
  EXPECT_FALSE(ParseTopologyBody(body.substr(0, body.size() - 1), &t));
  t.endpoints[0].slot_ranges.clear();
  EXPECT_EQ(t.EndpointFor(5), std::nullopt);
}

TEST(KeepClient, RetriesBusyWithBackoff) {
  FakeServer server(Fake());
  SyncClient client(OptionsFor(server));
  EXPECT_TRUE(client.Set("busy1", "v"));
  EXPECT_EQ(client.stats().busy_retries, 2u);

  Options no_retry = OptionsFor(server);
  no_retry.busy_retries = 1;
  SyncClient impatient(no_retry);
  try {
    impatient.Set("busy2", "v");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kBusy);
    EXPECT_EQ(e.retry_after_ms(), 1u);
  }
}

TEST(KeepClient, TimesOut) {
  FakeServer server(Fake());
  Options o = OptionsFor(server);
  o.timeout = std::chrono::milliseconds(100);
  SyncClient client(o);
  auto start = std::chrono::steady_clock::now();
  try {
    client.Get("slow");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTimeout);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // The connection is still usable.
  EXPECT_EQ(client.Ping(), "PONG");
}

TEST(KeepClient, ConnectFailureIsAnError) {
  uint16_t port;
  {
    FakeServer server(Fake());
    port = server.port();
  }
  Options o;
  o.port = port;
  try {
    SyncClient client(o);
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConnection);
  }
}

TEST(KeepClient, AuthProof) {
  FakeServer server(Fake("s3cret"));
  Options o = OptionsFor(server);
  o.secret = "s3cret";
  SyncClient client(o);
  EXPECT_TRUE(client.Set("a", "1"));
  o.secret = "wrong";
  try {
    SyncClient bad(o);
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kAuth);
    EXPECT_EQ(e.message(), "AUTH invalid proof");
  }
}

// Runs `n` GETs issued at once on the connection's thread; returns the client's stats.
Stats Burst(FakeServer& server, bool batching, int n, bool* all_matched) {
  boost::asio::io_context io;
  Options o = OptionsFor(server);
  o.batching = batching;
  auto conn = Connection::Create(io, o);
  std::atomic<int> done{0};
  *all_matched = true;
  conn->AsyncConnect([&](std::optional<Error> e) {
    ASSERT_FALSE(e.has_value());
    for (int i = 0; i < n; ++i) {
      std::string key = "key" + std::to_string(i % 50);
      conn->AsyncGet(key, [&, i](Result r) {
        // The fake stores "val<i%50>" under "key<i%50>": a mismatched id would show here.
        if (!r.ok() || r.body != "val" + std::to_string(i % 50)) *all_matched = false;
        if (++done == n) conn->Close();
      });
    }
  });
  io.run();
  EXPECT_EQ(done.load(), n);
  return conn->stats();
}

TEST(KeepClient, RepliesInAnyOrderAndBatching) {
  FakeServer server(Fake("", true));
  {
    SyncClient seed(OptionsFor(server));
    for (int i = 0; i < 50; ++i) seed.Set("key" + std::to_string(i), "val" + std::to_string(i));
  }
  bool matched = false;
  Stats batched = Burst(server, true, 2000, &matched);
  EXPECT_TRUE(matched);
  EXPECT_EQ(batched.requests_written, 2001u);  // + HELLO
  // Everything issued while the first write was in flight went out together, 256 at most.
  EXPECT_LE(batched.writes, 20u);
  EXPECT_GE(batched.writes, 2001u / 256);
  auto reads = server.requests_per_read();
  EXPECT_GT(*std::max_element(reads.begin(), reads.end()), 1u);

  Stats single = Burst(server, false, 300, &matched);
  EXPECT_TRUE(matched);
  EXPECT_EQ(single.writes, single.requests_written);
}

TEST(KeepClient, BatchBytesCap) {
  FakeServer server(Fake());
  boost::asio::io_context io;
  Options o = OptionsFor(server);
  o.max_batch_bytes = 100 * 1024;
  auto conn = Connection::Create(io, o);
  int done = 0;
  std::string value(40 * 1024, 'x');
  conn->AsyncConnect([&](std::optional<Error>) {
    for (int i = 0; i < 20; ++i) {
      conn->AsyncSet("k", value, 0, 0, [&](Result r) {
        EXPECT_TRUE(r.ok());
        if (++done == 20) conn->Close();
      });
    }
  });
  io.run();
  EXPECT_EQ(done, 20);
  // 40 KiB frames under a 100 KiB cap: at most two per write.
  EXPECT_GE(conn->stats().writes, 10u);
}

TEST(KeepClient, SubscribeReceivesEventsAndHeartbeats) {
  FakeServer server(Fake());
  SyncClient client(OptionsFor(server));
  std::mutex mu;
  std::vector<std::string> got;
  uint32_t sub = client.Subscribe("ch", [&](const bin::Event& e) {
    std::lock_guard<std::mutex> lock(mu);
    got.push_back(e.heartbeat ? "hb" + std::to_string(e.seq)
                              : std::string(e.channel) + ":" + std::string(e.message) + "#" +
                                    std::to_string(e.seq));
  });
  EXPECT_NE(sub, 0u);
  EXPECT_EQ(client.Publish("ch", "one"), 1);
  EXPECT_EQ(client.Publish("ch", "two"), 1);
  client.Unsubscribe(sub);
  EXPECT_EQ(client.Publish("ch", "three"), 0);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(got, (std::vector<std::string>{"hb0", "ch:one#1", "ch:two#2"}));
}

TEST(KeepClient, ServerCloseFailsOutstanding) {
  auto server = std::make_unique<FakeServer>(FakeServer::Options{});
  Options o = OptionsFor(*server);
  o.timeout = std::chrono::milliseconds(5000);
  SyncClient client(o);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server.reset();
  });
  try {
    client.Get("slow");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConnection);
  }
  killer.join();
}

}  // namespace
}  // namespace keep::client
