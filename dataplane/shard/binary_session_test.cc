// The binary session's state machine against a real two-shard group in this process: preface,
// HELLO and auth, typed ops on both shards, bad frames, subscriptions and heartbeats, TOPOLOGY.
#include "dataplane/shard/binary_session.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "dataplane/core/slot.h"
#include "dataplane/shard/shard_group.h"

namespace keep::shard {
namespace {

namespace bin = proto::binary;

std::string Proof(std::string_view secret, std::string_view nonce) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(nonce.data()), nonce.size(), mac, &len);
  return std::string(reinterpret_cast<char*>(mac), len);
}

class Group {
 public:
  explicit Group(std::string requirepass = "", std::vector<int> shard_ports = {},
                 cluster::ViewPublisher* views = nullptr) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(listen_fd_, 64);
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    std::vector<ShardOptions> options(2);
    for (int i = 0; i < 2; ++i) {
      options[i].index = i;
      options[i].count = 2;
      options[i].command_limits.requirepass = requirepass;
      options[i].binary_limits.max_value_size = 1024;  // small, so TOO_LARGE is cheap to reach
    }
    // Every connection lands on shard 0; keys of shard 1 are forwarded.
    options[0].listen_fds.push_back(listen_fd_);
    commands::ServerFacts facts;
    facts.tcp_port = port_;
    facts.shard_count = 2;
    facts.shard_ports = std::move(shard_ports);
    group_ = std::make_unique<ShardGroup>(std::move(options),
                                          core::SlotFunction(core::SlotHash::kKeyed, ""), facts,
                                          std::map<std::string, std::string>{}, 1000);
    group_->set_views(views);
    group_->Start();
  }
  ~Group() { group_.reset(); }
  int port() const { return port_; }
  ShardGroup& group() { return *group_; }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::unique_ptr<ShardGroup> group_;
};

class Client {
 public:
  explicit Client(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  }
  ~Client() { close(fd_); }

  void Send(std::string_view bytes) {
    ASSERT_EQ(send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // The next frame, or nullopt on EOF/timeout. Copies the frame so views stay valid.
  std::optional<std::string> Frame(int timeout_ms = 3000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      bin::ReplyView reply;
      size_t consumed = 0;
      if (decoder_.DecodeReply(buffer_, &reply, &consumed) == bin::DecodeStatus::kComplete) {
        std::string frame = buffer_.substr(0, consumed);
        buffer_.erase(0, consumed);
        return frame;
      }
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
      if (left <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, left) <= 0) return std::nullopt;
      char chunk[65536];
      ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, n);
    }
  }
  bin::ReplyView Reply(const std::string& frame) {
    bin::ReplyView reply;
    size_t consumed = 0;
    bin::Decoder decoder;
    EXPECT_EQ(decoder.DecodeReply(frame, &reply, &consumed), bin::DecodeStatus::kComplete);
    return reply;
  }
  // Sends the preface and returns the server preface's nonce.
  std::string Open() {
    std::string preface;
    bin::AppendPreface(&preface);
    Send(preface);
    auto frame = Frame();
    EXPECT_TRUE(frame.has_value());
    if (!frame) return {};
    bin::ReplyView reply = Reply(*frame);
    EXPECT_EQ(reply.flags, bin::kReplyPreface);
    bin::ServerPreface parsed;
    EXPECT_TRUE(bin::ParseServerPreface(reply.body, &parsed));
    auth_required_ = parsed.auth_required;
    return std::string(parsed.nonce);
  }
  // Sends one request and returns (status, body) of the reply with its id.
  std::pair<bin::Status, std::string> Call(const std::string& request) {
    Send(request);
    uint32_t id = bin::LoadU32(request.data() + 4);
    while (auto frame = Frame()) {
      bin::ReplyView reply = Reply(*frame);
      if (reply.id == id && (reply.flags & bin::kReplyEvent) == 0) {
        return {reply.status, std::string(reply.body)};
      }
    }
    ADD_FAILURE() << "no reply for id " << id;
    return {bin::Status::kError, "<none>"};
  }
  bool Closed(int timeout_ms = 3000) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    char byte;
    return recv(fd_, &byte, 1, MSG_PEEK) == 0;
  }
  bool auth_required() const { return auth_required_; }

 private:
  int fd_ = -1;
  std::string buffer_;
  bin::Decoder decoder_;
  bool auth_required_ = false;
};

std::string Req(void (*encode)(std::string*, uint32_t, std::string_view), uint32_t id,
                std::string_view key) {
  std::string out;
  encode(&out, id, key);
  return out;
}

int64_t Int(const std::string& body) {
  int64_t v = 0;
  EXPECT_TRUE(bin::ParseInt(body, &v));
  return v;
}

// Keys that land on each shard of two, by the group's slot function.
std::string KeyOnShard(int shard) {
  core::SlotFunction slot_of(core::SlotHash::kKeyed, "");
  for (int i = 0;; ++i) {
    std::string key = std::to_string(i);
    key.append("-k");
    if (static_cast<int>(slot_of(key) % 2) == shard) return key;
  }
}

TEST(BinarySession, TypedOpsOnBothShards) {
  Group group;
  Client c(group.port());
  c.Open();
  EXPECT_FALSE(c.auth_required());
  std::string ping;
  bin::EncodePing(&ping, 1);
  EXPECT_EQ(c.Call(ping), std::make_pair(bin::Status::kOk, std::string("PONG")));
  for (int shard = 0; shard < 2; ++shard) {
    std::string key = KeyOnShard(shard);
    std::string set;
    bin::EncodeSet(&set, 10, key, key + "-v");
    EXPECT_EQ(c.Call(set).first, bin::Status::kOk);
    EXPECT_EQ(c.Call(Req(bin::EncodeGet, 11, key)), std::make_pair(bin::Status::kOk, key + "-v"));
    std::string nx;
    bin::EncodeSet(&nx, 12, key, "other", 0, bin::kSetNx);
    EXPECT_EQ(c.Call(nx).first, bin::Status::kNil);
    std::string incr;
    bin::EncodeIncr(&incr, 13, key, 1);
    EXPECT_EQ(c.Call(incr).first, bin::Status::kError);
    EXPECT_EQ(Int(c.Call(Req(bin::EncodeDel, 14, key)).second), 1);
    EXPECT_EQ(c.Call(Req(bin::EncodeGet, 15, key)).first, bin::Status::kNil);
    // INCR with ttl_on_create runs as one script on the owner: the key gets the TTL.
    incr.clear();
    bin::EncodeIncr(&incr, 16, key, 5, 60000);
    EXPECT_EQ(Int(c.Call(incr).second), 5);
    std::string pttl;
    bin::EncodeCommand(&pttl, 17, {"PTTL", key});
    auto [status, body] = c.Call(pttl);
    EXPECT_EQ(status, bin::Status::kOk);
    ASSERT_EQ(body[0], ':');
    EXPECT_GT(std::stoll(body.substr(1)), 0);
    std::string lock;
    bin::EncodeLock(&lock, 18, key, "me", 1000);
    EXPECT_EQ(c.Call(lock).first, bin::Status::kWrongType);
  }
}

TEST(BinarySession, PipelinedRepliesMatchIdsAcrossShards) {
  Group group;
  Client c(group.port());
  c.Open();
  std::string batch;
  for (uint32_t id = 1; id <= 200; ++id) {
    std::string key = KeyOnShard(id % 2) + "-" + std::to_string(id);
    bin::EncodeSet(&batch, id, key, std::to_string(id));
  }
  c.Send(batch);
  std::vector<bool> seen(201, false);
  for (int i = 0; i < 200; ++i) {
    auto frame = c.Frame();
    ASSERT_TRUE(frame.has_value());
    bin::ReplyView reply = c.Reply(*frame);
    EXPECT_EQ(reply.status, bin::Status::kOk);
    ASSERT_TRUE(reply.id >= 1 && reply.id <= 200);
    EXPECT_FALSE(seen[reply.id]);
    seen[reply.id] = true;
  }
}

TEST(BinarySession, WrongVersionGetsErrorThenClose) {
  Group group;
  Client c(group.port());
  std::string preface;
  bin::AppendPreface(&preface, 9);
  c.Send(preface);
  auto frame = c.Frame();
  ASSERT_TRUE(frame.has_value());
  bin::ReplyView reply = c.Reply(*frame);
  EXPECT_EQ(reply.id, 0u);
  EXPECT_EQ(reply.status, bin::Status::kError);
  EXPECT_EQ(reply.body, "ERR unsupported protocol version 9 (server speaks 1)");
  EXPECT_TRUE(c.Closed());
}

TEST(BinarySession, NotAPrefaceClosesWithoutReply) {
  Group group;
  Client c(group.port());
  c.Send(std::string("\x00XYZ", 4));
  EXPECT_TRUE(c.Closed());
  Client d(group.port());
  d.Send(std::string("\x05", 1));
  EXPECT_TRUE(d.Closed());
}

TEST(BinarySession, BadFramesAnsweredConnectionSurvives) {
  Group group;
  Client c(group.port());
  c.Open();
  // Unknown op.
  std::string unknown;
  bin::EncodeRequest(&unknown, 5, static_cast<bin::Op>(0x7f), 0, "k", "");
  EXPECT_EQ(c.Call(unknown).first, bin::Status::kError);
  // Malformed body.
  std::string bad;
  bin::EncodeRequest(&bad, 6, bin::Op::kIncr, 0, "k", "short");
  EXPECT_EQ(c.Call(bad),
            std::make_pair(bin::Status::kError, std::string("ERR malformed INCR body")));
  // Over the frame limit (max_value_size 1024 here): TOO_LARGE, bytes skipped.
  std::string big;
  bin::EncodeSet(&big, 7, "k", std::string((1 << 20) + 4096, 'x'));
  EXPECT_EQ(c.Call(big).first, bin::Status::kTooLarge);
  // COMMAND that would change the connection's mode.
  std::string sub;
  bin::EncodeCommand(&sub, 8, {"subscribe", "x"});
  EXPECT_EQ(c.Call(sub).first, bin::Status::kError);
  std::string echo;
  bin::EncodeCommand(&echo, 9, {"ECHO", "hi"});
  EXPECT_EQ(c.Call(echo), std::make_pair(bin::Status::kOk, std::string("$2\r\nhi\r\n")));
  // Id 0 is fatal: ERROR under id 0, then close.
  std::string zero;
  bin::EncodeGet(&zero, 0, "k");
  c.Send(zero);
  auto frame = c.Frame();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(c.Reply(*frame).id, 0u);
  EXPECT_TRUE(c.Closed());
}

TEST(BinarySession, HelloProofGatesRequests) {
  Group group("s3cret");
  Client c(group.port());
  std::string nonce = c.Open();
  EXPECT_TRUE(c.auth_required());
  EXPECT_EQ(c.Call(Req(bin::EncodeGet, 1, "k")).first, bin::Status::kAuth);
  std::string ping;
  bin::EncodePing(&ping, 2);
  EXPECT_EQ(c.Call(ping).first, bin::Status::kOk);
  std::string hello;
  bin::EncodeHello(&hello, 3, "t", Proof("wrong", nonce));
  EXPECT_EQ(c.Call(hello).first, bin::Status::kAuth);
  hello.clear();
  bin::EncodeHello(&hello, 4, "t", "");
  EXPECT_EQ(c.Call(hello).first, bin::Status::kAuth);
  hello.clear();
  bin::EncodeHello(&hello, 5, "t", Proof("s3cret", nonce));
  auto [status, body] = c.Call(hello);
  EXPECT_EQ(status, bin::Status::kOk);
  bin::HelloReply reply;
  EXPECT_TRUE(bin::ParseHelloReply(body, &reply));
  EXPECT_EQ(reply.version, bin::kVersion);
  EXPECT_EQ(c.Call(Req(bin::EncodeGet, 6, "k")).first, bin::Status::kNil);
}

TEST(BinarySession, SubscriptionEventsAndHeartbeats) {
  Group group;
  Client sub(group.port());
  Client pub(group.port());
  sub.Open();
  pub.Open();
  std::string s;
  bin::EncodeSubscribe(&s, 42, "news");
  auto [status, body] = sub.Call(s);
  EXPECT_EQ(status, bin::Status::kOk);
  EXPECT_EQ(body.size(), 8u);
  std::string p;
  bin::EncodePublish(&p, 1, "news", "hello");
  EXPECT_EQ(Int(pub.Call(p).second), 1);
  auto frame = sub.Frame();
  ASSERT_TRUE(frame.has_value());
  bin::ReplyView reply = sub.Reply(*frame);
  bin::Event event;
  ASSERT_TRUE(bin::ParseEvent(reply, &event));
  EXPECT_EQ(reply.id, 42u);
  EXPECT_EQ(event.seq, 1u);
  EXPECT_EQ(event.channel, "news");
  EXPECT_EQ(event.message, "hello");
  // Idle: a heartbeat with the current number arrives within a few periods.
  frame = sub.Frame(1000);
  ASSERT_TRUE(frame.has_value());
  reply = sub.Reply(*frame);
  ASSERT_TRUE(bin::ParseEvent(reply, &event));
  EXPECT_TRUE(event.heartbeat);
  EXPECT_EQ(event.seq, 1u);
  // The same id twice is refused; UNSUBSCRIBE ends it; a second UNSUBSCRIBE is NIL.
  EXPECT_EQ(sub.Call(s).first, bin::Status::kError);
  std::string u;
  bin::EncodeUnsubscribe(&u, 43, 42);
  EXPECT_EQ(sub.Call(u).first, bin::Status::kOk);
  u.clear();
  bin::EncodeUnsubscribe(&u, 44, 42);
  EXPECT_EQ(sub.Call(u).first, bin::Status::kNil);
  p.clear();
  bin::EncodePublish(&p, 2, "news", "again");
  EXPECT_EQ(Int(pub.Call(p).second), 0);
}

TEST(BinarySession, TopologyListsShardPorts) {
  Group group("", {7101, 7102});
  Client c(group.port());
  c.Open();
  std::string t;
  bin::EncodeTopology(&t, 3);
  auto [status, body] = c.Call(t);
  ASSERT_EQ(status, bin::Status::kOk);
  bin::Topology topology;
  ASSERT_TRUE(bin::ParseTopology(body, &topology));
  ASSERT_EQ(topology.endpoints.size(), 2u);
  EXPECT_EQ(topology.endpoints[0].port, 7101);
  EXPECT_EQ(topology.endpoints[1].port, 7102);
  EXPECT_EQ(topology.endpoints[0].host, "127.0.0.1");
  size_t slots = 0;
  for (const auto& e : topology.endpoints) {
    for (auto [first, last] : e.slot_ranges) slots += last - first + 1u;
  }
  EXPECT_EQ(slots, core::kSlotCount);
}

TEST(BinarySession, TopologyWithoutShardPortsIsTheClientPort) {
  TopologyInput input;
  input.host = "10.1.2.3";
  input.client_port = 7000;
  input.shard_count = 4;
  bin::Topology topology;
  BuildTopology(input, &topology);
  ASSERT_EQ(topology.endpoints.size(), 1u);
  EXPECT_EQ(topology.endpoints[0].port, 7000);
  ASSERT_EQ(topology.endpoints[0].slot_ranges.size(), 1u);
  EXPECT_EQ(topology.endpoints[0].slot_ranges[0].first, 0);
  EXPECT_EQ(topology.endpoints[0].slot_ranges[0].second, 16383);
}

// A two-member view as the control thread would publish it: this member ("self", no shard
// ports, the test's listener) owns slots 0..8191, "other" (two shard ports) owns the rest.
std::unique_ptr<cluster::View> TwoMemberView(int self_port, uint64_t epoch, bool fenced) {
  auto view = std::make_unique<cluster::View>();
  view->epoch = epoch;
  view->fenced = fenced;
  view->self = 0;
  cluster::ViewMember self;
  self.member = {"self", "127.0.0.1", self_port, 7001, 2, 0};
  self.state = cluster::MemberState::kUp;
  cluster::ViewMember other;
  other.member = {"other", "10.9.9.9", 7000, 7001, 2, 7100};
  other.state = cluster::MemberState::kLeaving;
  for (cluster::ViewMember* vm : {&self, &other}) cluster::FillEndpoints(vm);
  view->members = {self, other};
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    bool mine = slot < core::kSlotCount / 2;
    view->owner[slot] = mine ? 0 : 1;
    view->phase[slot] = mine ? cluster::SlotPhase::kOwned : cluster::SlotPhase::kNotOwned;
  }
  view->members[0].slots_owned = view->members[1].slots_owned = core::kSlotCount / 2;
  return view;
}

TEST(BinarySession, ClusterTopologyComesFromTheView) {
  auto view = TwoMemberView(7000, 5, false);
  bin::Topology t;
  BuildClusterTopology(*view, &t);
  EXPECT_EQ(t.view_epoch, 5u);
  EXPECT_EQ(t.flags, bin::kTopologyCluster);
  EXPECT_EQ(t.self, 0);
  ASSERT_EQ(t.members.size(), 2u);
  EXPECT_EQ(t.members[0].id, "self");
  EXPECT_EQ(t.members[1].id, "other");
  EXPECT_EQ(t.members[1].host, "10.9.9.9");
  EXPECT_EQ(t.members[1].state, bin::MemberState::kLeaving);
  EXPECT_EQ(t.members[1].first_endpoint, 1);
  EXPECT_EQ(t.members[1].endpoint_count, 2);
  ASSERT_EQ(t.endpoints.size(), 3u);
  EXPECT_EQ(t.endpoints[0].host, "127.0.0.1");
  EXPECT_EQ(t.endpoints[0].port, 7000);
  // One endpoint serving a run of slots is one range; a member's shards take alternate slots.
  EXPECT_EQ(t.endpoints[0].slot_ranges, (std::vector<std::pair<uint16_t, uint16_t>>{{0, 8191}}));
  EXPECT_EQ(t.endpoints[1].port, 7100);
  EXPECT_EQ(t.endpoints[2].port, 7101);
  EXPECT_EQ(t.endpoints[1].slot_ranges.size(), 4096u);
  EXPECT_EQ(t.endpoints[1].slot_ranges.front(), (std::pair<uint16_t, uint16_t>{8192, 8192}));
  EXPECT_EQ(t.endpoints[2].slot_ranges.back(), (std::pair<uint16_t, uint16_t>{16383, 16383}));
  // Every slot exactly once, at the endpoint MOVED names for it.
  std::vector<int> seen(core::kSlotCount, 0);
  for (const bin::Endpoint& e : t.endpoints) {
    for (auto [first, last] : e.slot_ranges) {
      for (uint32_t slot = first; slot <= last; ++slot) {
        ++seen[slot];
        std::string moved;
        cluster::RouteError(*view, slot, cluster::SlotRoute::kMoved, &moved);
        if (slot >= core::kSlotCount / 2) {
          EXPECT_EQ(moved.substr(moved.rfind(' ') + 1),
                    std::string(e.host) + ":" + std::to_string(e.port));
        }
      }
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(core::kSlotCount));
  // Slots with no owner (a fenced view may have some) are left out.
  view->owner[3] = cluster::kNoOwner;
  view->fenced = true;
  BuildClusterTopology(*view, &t);
  EXPECT_EQ(t.flags, bin::kTopologyCluster | bin::kTopologyFenced);
  EXPECT_EQ(t.endpoints[0].slot_ranges,
            (std::vector<std::pair<uint16_t, uint16_t>>{{0, 2}, {4, 8191}}));
  // And it survives the codec.
  std::string frame;
  bin::EncodeTopologyReply(&frame, 1, t);
  bin::Topology back;
  ASSERT_TRUE(bin::ParseTopology(std::string_view(frame).substr(bin::kFrameHeaderSize), &back));
  EXPECT_EQ(back.members.size(), 2u);
  EXPECT_EQ(back.endpoints[2].slot_ranges.size(), 4096u);
}

TEST(BinarySession, SingleNodeTopologyHasOneMember) {
  TopologyInput input;
  input.host = "10.1.2.3";
  input.client_port = 7000;
  input.shard_ports = {7100, 7101};
  input.shard_count = 2;
  bin::Topology t;
  BuildTopology(input, &t);
  EXPECT_EQ(t.flags, 0);
  ASSERT_EQ(t.members.size(), 1u);
  EXPECT_EQ(t.members[0].id, "");
  EXPECT_EQ(t.members[0].client_port, 7000);
  EXPECT_EQ(t.members[0].endpoint_count, 2);
  EXPECT_EQ(t.endpoints[0].slot_ranges.size(), 8192u);
}

// In cluster mode the shard's cluster check answers every op, COMMAND included, with a status:
// MOVED carrying the epoch of the view that decided, FENCED, BUSY for a slot in a handoff.
TEST(BinarySession, ClusterRefusalsAreStatuses) {
  cluster::ViewPublisher views(2);
  // The listener's port is only known once the group is up; the view's own endpoint is not used.
  views.Publish(TwoMemberView(1, 5, false));
  Group group("", {}, &views);
  Client c(group.port());
  c.Open();
  core::SlotFunction slot_of(core::SlotHash::kKeyed, "");
  std::string mine, theirs;
  for (int i = 0; mine.empty() || theirs.empty(); ++i) {
    std::string key = "k" + std::to_string(i);
    (slot_of(key) < core::kSlotCount / 2 ? mine : theirs) = key;
  }
  uint32_t slot = slot_of(theirs);
  std::string req;
  bin::EncodeGet(&req, 1, theirs);
  auto [status, body] = c.Call(req);
  ASSERT_EQ(status, bin::Status::kMoved);
  bin::Moved moved;
  ASSERT_TRUE(bin::ParseMoved(body, &moved));
  EXPECT_EQ(moved.slot, slot);
  EXPECT_EQ(moved.view_epoch, 5u);
  EXPECT_EQ(moved.host, "10.9.9.9");
  EXPECT_EQ(moved.port, 7100 + slot % 2);
  req.clear();
  bin::EncodeCommand(&req, 2, {"GET", theirs});
  EXPECT_EQ(c.Call(req).first, bin::Status::kMoved);
  req.clear();
  bin::EncodeSet(&req, 3, mine, "v");
  EXPECT_EQ(c.Call(req).first, bin::Status::kOk);
  // A command's own error reply stays a RESP reply under COMMAND.
  req.clear();
  bin::EncodeCommand(&req, 4, {"INCR", mine});
  auto incr = c.Call(req);
  EXPECT_EQ(incr.first, bin::Status::kOk);
  EXPECT_EQ(incr.second.substr(0, 4), "-ERR");

  // A slot this member is importing: BUSY until the handoff is done.
  auto importing = TwoMemberView(1, 6, false);
  importing->phase[slot] = cluster::SlotPhase::kImporting;
  importing->owner[slot] = 0;
  views.Publish(std::move(importing));
  req.clear();
  bin::EncodeGet(&req, 5, theirs);
  auto [busy, retry] = c.Call(req);
  EXPECT_EQ(busy, bin::Status::kBusy);
  uint32_t retry_ms = 0;
  ASSERT_TRUE(bin::ParseBusy(retry, &retry_ms));
  EXPECT_EQ(retry_ms, kBusyRetryMs);

  // Fenced: every keyed request, reads too; PING and TOPOLOGY still answer.
  views.Publish(TwoMemberView(1, 7, true));
  req.clear();
  bin::EncodeGet(&req, 6, mine);
  EXPECT_EQ(c.Call(req),
            std::make_pair(bin::Status::kFenced, std::string(cluster::kClusterDownError)));
  req.clear();
  bin::EncodeCommand(&req, 7, {"SET", mine, "x"});
  EXPECT_EQ(c.Call(req).first, bin::Status::kFenced);
  req.clear();
  bin::EncodePing(&req, 8);
  EXPECT_EQ(c.Call(req).first, bin::Status::kOk);
  req.clear();
  bin::EncodeTopology(&req, 9);
  auto [ts, tb] = c.Call(req);
  ASSERT_EQ(ts, bin::Status::kOk);
  bin::Topology t;
  ASSERT_TRUE(bin::ParseTopology(tb, &t));
  EXPECT_EQ(t.view_epoch, 7u);
  EXPECT_EQ(t.flags, bin::kTopologyCluster | bin::kTopologyFenced);
  EXPECT_EQ(t.members.size(), 2u);

  // Unfenced again: the same connection serves.
  views.Publish(TwoMemberView(1, 8, false));
  req.clear();
  bin::EncodeGet(&req, 10, mine);
  EXPECT_EQ(c.Call(req), std::make_pair(bin::Status::kOk, std::string("v")));
}

TEST(BinarySession, RefusedCommandsAndProofs) {
  EXPECT_TRUE(RefusedOverBinary("SUBSCRIBE"));
  EXPECT_TRUE(RefusedOverBinary("hello"));
  EXPECT_TRUE(RefusedOverBinary("Auth"));
  EXPECT_FALSE(RefusedOverBinary("GET"));
  std::string nonce(16, '\x07');
  EXPECT_TRUE(ValidProof("pw", nonce, Proof("pw", nonce)));
  EXPECT_FALSE(ValidProof("pw", nonce, Proof("pw2", nonce)));
  EXPECT_FALSE(ValidProof("pw", nonce, ""));
}

}  // namespace
}  // namespace keep::shard
