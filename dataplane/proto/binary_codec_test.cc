#include "dataplane/proto/binary_codec.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace keep::proto::binary {
namespace {

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

std::map<std::string, std::string> LoadVectors() {
  std::ifstream in(KEEP_PROTO_DIR "/binary_test_vectors.txt");
  std::map<std::string, std::string> vectors;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, hex;
    fields >> name >> hex;
    vectors[name] = Unhex(hex);
  }
  return vectors;
}

const std::map<std::string, std::string>& Vectors() {
  static const auto* vectors = new std::map<std::string, std::string>(LoadVectors());
  return *vectors;
}

std::string Vec(const std::string& name) {
  auto it = Vectors().find(name);
  EXPECT_NE(it, Vectors().end()) << name;
  return it == Vectors().end() ? std::string() : it->second;
}

// The topology of the rep_topology vector: two members, one endpoint each, half the slots each.
Topology VectorTopology() {
  Topology t;
  t.view_epoch = 7;
  t.endpoints = {{"10.0.0.1", 7101, {{0, 8191}}}, {"10.0.0.2", 7201, {{8192, 16383}}}};
  t.flags = kTopologyCluster;
  t.self = 0;
  t.members = {{"a", "10.0.0.1", 7000, MemberState::kUp, 0, 1},
               {"b", "10.0.0.2", 7000, MemberState::kDown, 1, 1}};
  return t;
}

TEST(BinaryVectors, FileIsReadable) { EXPECT_GE(Vectors().size(), 25u); }

TEST(BinaryVectors, RequestEncodersMatch) {
  std::string out;
  AppendPreface(&out);
  EXPECT_EQ(out, Vec("preface_v1"));
  auto check = [](const std::string& name, auto encode) {
    std::string s;
    encode(&s);
    EXPECT_EQ(s, Vec(name)) << name;
  };
  check("req_hello", [](std::string* s) { EncodeHello(s, 1, "cli", ""); });
  check("req_ping", [](std::string* s) { EncodePing(s, 2); });
  check("req_get", [](std::string* s) { EncodeGet(s, 3, "foo"); });
  check("req_set_px_nx", [](std::string* s) { EncodeSet(s, 4, "foo", "bar", 1500, kSetNx); });
  check("req_del", [](std::string* s) { EncodeDel(s, 5, "foo"); });
  check("req_incr", [](std::string* s) { EncodeIncr(s, 6, "ctr", -2, 60000); });
  check("req_expire_gt", [](std::string* s) { EncodeExpire(s, 7, "foo", 10000, kExpireGt); });
  check("req_lock", [](std::string* s) { EncodeLock(s, 8, "lk", "me", 30000); });
  check("req_throttle", [](std::string* s) { EncodeThrottle(s, 9, "rl", 15, 30, 60, 1); });
  check("req_fixed_window", [](std::string* s) { EncodeFixedWindow(s, 10, "fw", 100, 1000, 1); });
  check("req_publish", [](std::string* s) { EncodePublish(s, 11, "ch", "hi"); });
  check("req_subscribe", [](std::string* s) { EncodeSubscribe(s, 12, "ch"); });
  check("req_unsubscribe", [](std::string* s) { EncodeUnsubscribe(s, 13, 12); });
  check("req_topology", [](std::string* s) { EncodeTopology(s, 14); });
  check("req_command", [](std::string* s) { EncodeCommand(s, 258, {"ECHO", "hi"}); });
}

TEST(BinaryVectors, ReplyEncodersMatch) {
  auto check = [](const std::string& name, auto encode) {
    std::string s;
    encode(&s);
    EXPECT_EQ(s, Vec(name)) << name;
  };
  std::string nonce;
  for (int i = 0; i < 16; ++i) nonce.push_back(static_cast<char>(i));
  check("server_preface", [&](std::string* s) { EncodeServerPreface(s, nonce, true); });
  check("rep_ok", [](std::string* s) { EncodeOk(s, 4); });
  check("rep_ok_value", [](std::string* s) { EncodeOk(s, 3, "bar"); });
  check("rep_nil", [](std::string* s) { EncodeNil(s, 3); });
  check("rep_int", [](std::string* s) { EncodeInt(s, 6, -2); });
  check("rep_error",
        [](std::string* s) { EncodeErrorText(s, 7, Status::kError, "ERR syntax error"); });
  check("rep_busy", [](std::string* s) { EncodeBusy(s, 8, 5); });
  check("rep_moved", [](std::string* s) { EncodeMoved(s, 9, 12182, 7, "10.0.0.12", 7001); });
  check("rep_hello", [](std::string* s) { EncodeHelloReply(s, 1, 42, 17825792); });
  check("rep_event", [](std::string* s) { EncodeEvent(s, 12, 3, "ch", "hi"); });
  check("rep_heartbeat", [](std::string* s) { EncodeHeartbeat(s, 12, 3); });
  check("rep_command_resp", [](std::string* s) { EncodeOk(s, 258, "$2\r\nhi\r\n"); });
  check("rep_topology", [](std::string* s) { EncodeTopologyReply(s, 14, VectorTopology()); });
}

TEST(BinaryVectors, TopologyVectorParses) {
  Decoder decoder;
  ReplyView r;
  size_t consumed = 0;
  std::string bytes = Vec("rep_topology");
  ASSERT_EQ(decoder.DecodeReply(bytes, &r, &consumed), DecodeStatus::kComplete);
  Topology t;
  ASSERT_TRUE(ParseTopology(r.body, &t));
  EXPECT_EQ(t.view_epoch, 7u);
  EXPECT_EQ(t.flags, kTopologyCluster);
  EXPECT_EQ(t.self, 0);
  ASSERT_EQ(t.endpoints.size(), 2u);
  EXPECT_EQ(t.endpoints[1].host, "10.0.0.2");
  EXPECT_EQ(t.endpoints[1].port, 7201);
  EXPECT_EQ(t.endpoints[1].slot_ranges,
            (std::vector<std::pair<uint16_t, uint16_t>>{{8192, 16383}}));
  ASSERT_EQ(t.members.size(), 2u);
  EXPECT_EQ(t.members[0].id, "a");
  EXPECT_EQ(t.members[1].state, MemberState::kDown);
  EXPECT_EQ(t.members[1].first_endpoint, 1);
  EXPECT_EQ(t.members[1].endpoint_count, 1);
  EXPECT_EQ(t.members[1].client_port, 7000);
  // Every strict prefix of the body is malformed: the member section is not optional.
  for (size_t n = 0; n < r.body.size(); ++n) {
    EXPECT_FALSE(ParseTopology(r.body.substr(0, n), &t)) << n;
  }
}

TEST(BinaryReplies, TopologyRejectsInconsistentBodies) {
  auto parses = [](Topology t) {
    std::string bytes;
    EncodeTopologyReply(&bytes, 1, t);
    Topology back;
    return ParseTopology(std::string_view(bytes).substr(kFrameHeaderSize), &back);
  };
  EXPECT_TRUE(parses(VectorTopology()));
  Topology t = VectorTopology();
  t.endpoints[0].slot_ranges = {{10, 9}};  // first after last
  EXPECT_FALSE(parses(t));
  t = VectorTopology();
  t.endpoints[0].slot_ranges = {{0, 16384}};  // past the last slot
  EXPECT_FALSE(parses(t));
  t = VectorTopology();
  t.members[1].endpoint_count = 2;  // endpoints past the list
  EXPECT_FALSE(parses(t));
  t = VectorTopology();
  t.members[0].state = static_cast<MemberState>(9);
  EXPECT_FALSE(parses(t));
  t = VectorTopology();
  t.self = 2;  // no such member
  EXPECT_FALSE(parses(t));
  t = VectorTopology();
  t.members.clear();
  t.self = 0;
  EXPECT_TRUE(parses(t));
}

TEST(BinaryVectors, EveryRequestVectorDecodes) {
  Decoder decoder;
  for (const auto& [name, bytes] : Vectors()) {
    if (name.rfind("req_", 0) != 0) continue;
    RequestView r;
    size_t consumed = 0;
    ASSERT_EQ(decoder.DecodeRequest(bytes, &r, &consumed), DecodeStatus::kComplete) << name;
    EXPECT_EQ(consumed, bytes.size()) << name;
    // Every strict prefix waits.
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_EQ(decoder.DecodeRequest(bytes.substr(0, n), &r, &consumed), DecodeStatus::kIncomplete)
          << name << " prefix " << n;
      EXPECT_EQ(consumed, 0u);
    }
  }
}

TEST(BinaryVectors, EveryReplyVectorDecodes) {
  Decoder decoder;
  for (const auto& [name, bytes] : Vectors()) {
    if (name.rfind("rep_", 0) != 0 && name != "server_preface") continue;
    ReplyView r;
    size_t consumed = 0;
    ASSERT_EQ(decoder.DecodeReply(bytes, &r, &consumed), DecodeStatus::kComplete) << name;
    EXPECT_EQ(consumed, bytes.size()) << name;
  }
}

TEST(BinaryDecode, SetFieldsAreViews) {
  std::string buf = Vec("req_set_px_nx") + Vec("req_get");
  Decoder decoder;
  RequestView r;
  size_t consumed = 0;
  ASSERT_EQ(decoder.DecodeRequest(buf, &r, &consumed), DecodeStatus::kComplete);
  EXPECT_EQ(r.id, 4u);
  EXPECT_EQ(r.op, Op::kSet);
  EXPECT_EQ(r.flags, kSetNx);
  EXPECT_EQ(r.key, "foo");
  EXPECT_GE(r.key.data(), buf.data());
  SetArgs set;
  ASSERT_TRUE(ParseSet(r.body, &set));
  EXPECT_EQ(set.ttl_ms, 1500u);
  EXPECT_EQ(set.value, "bar");
  ASSERT_EQ(decoder.DecodeRequest(std::string_view(buf).substr(consumed), &r, &consumed),
            DecodeStatus::kComplete);
  EXPECT_EQ(r.op, Op::kGet);
  EXPECT_TRUE(r.body.empty());
}

TEST(BinaryDecode, NeededIsTheFrameEnd) {
  std::string set;
  EncodeSet(&set, 1, "k", std::string(1000, 'v'));
  Decoder decoder;
  RequestView r;
  size_t consumed = 0;
  EXPECT_EQ(decoder.DecodeRequest(set.substr(0, 2), &r, &consumed), DecodeStatus::kIncomplete);
  EXPECT_EQ(decoder.needed(), kFrameHeaderSize);
  EXPECT_EQ(decoder.DecodeRequest(set.substr(0, 20), &r, &consumed), DecodeStatus::kIncomplete);
  EXPECT_EQ(decoder.needed(), set.size());
}

TEST(BinaryDecode, ShortLengthIsFatal) {
  std::string frame = Unhex("07000000010000000200");
  Decoder decoder;
  RequestView r;
  size_t consumed = 0;
  EXPECT_EQ(decoder.DecodeRequest(frame, &r, &consumed), DecodeStatus::kError);
  EXPECT_EQ(decoder.error(), "ERR Protocol error: frame length 7 below 8");
  ReplyView rep;
  EXPECT_EQ(decoder.DecodeReply(frame, &rep, &consumed), DecodeStatus::kError);
}

TEST(BinaryDecode, IdZeroIsFatal) {
  std::string frame;
  EncodeGet(&frame, 0, "k");
  Decoder decoder;
  RequestView r;
  size_t consumed = 0;
  EXPECT_EQ(decoder.DecodeRequest(frame, &r, &consumed), DecodeStatus::kError);
}

TEST(BinaryDecode, OversizedFrameIsSkippedFromItsHeader) {
  Limits limits;
  limits.max_value_size = 100;
  Decoder decoder(limits);
  std::string frame;
  EncodeSet(&frame, 9, "k", std::string(limits.max_frame_len(), 'v'));
  RequestView r;
  size_t consumed = 0;
  // Only the header has arrived: the verdict is already final.
  EXPECT_EQ(decoder.DecodeRequest(frame.substr(0, 12), &r, &consumed), DecodeStatus::kSkip);
  EXPECT_EQ(decoder.skip_id(), 9u);
  EXPECT_EQ(decoder.skip_status(), Status::kTooLarge);
  EXPECT_EQ(decoder.skip_bytes(), frame.size());
  EXPECT_EQ(consumed, 0u);
  EXPECT_NE(decoder.skip_text().find("TOO_LARGE"), std::string::npos);
}

TEST(BinaryDecode, BeyondSkipLimitIsFatal) {
  Limits limits;
  limits.max_skip_len = 1000;
  limits.max_value_size = 10;
  Decoder decoder(limits);
  std::string frame = Unhex("e9030000");  // 1001
  RequestView r;
  size_t consumed = 0;
  EXPECT_EQ(decoder.DecodeRequest(frame, &r, &consumed), DecodeStatus::kError);
}

TEST(BinaryDecode, BadHeaderFieldsAreSkipped) {
  Decoder decoder;
  RequestView r;
  size_t consumed = 0;
  struct Case {
    std::string frame;
    std::string text;
  };
  std::string unknown_op, bad_flags, key_overflow, keyed_hello;
  EncodeRequest(&unknown_op, 5, static_cast<Op>(0x7f), 0, "k", "");
  EncodeRequest(&bad_flags, 5, Op::kGet, 0x01, "k", "");
  EncodeRequest(&keyed_hello, 5, Op::kHello, 0, "k", "");
  EncodeRequest(&key_overflow, 5, Op::kGet, 0, "abc", "");
  key_overflow[10] = 4;  // key_len 4 in a frame with 3 bytes after the header
  for (const Case& c : {Case{unknown_op, "ERR unknown op 0x7f"},
                        Case{bad_flags, "ERR unsupported flags 0x01 for GET"},
                        Case{keyed_hello, "ERR HELLO takes no key"},
                        Case{key_overflow, "ERR Protocol error: key length exceeds the frame"}}) {
    ASSERT_EQ(decoder.DecodeRequest(c.frame, &r, &consumed), DecodeStatus::kSkip) << c.text;
    EXPECT_EQ(decoder.skip_status(), Status::kError);
    EXPECT_EQ(decoder.skip_text(), c.text);
    EXPECT_EQ(decoder.skip_bytes(), c.frame.size());
    EXPECT_EQ(decoder.skip_id(), 5u);
  }
}

TEST(BinaryDecode, UnknownReplyStatusIsFatal) {
  std::string frame;
  EncodeReply(&frame, 1, static_cast<Status>(0x40), 0, "");
  Decoder decoder;
  ReplyView r;
  size_t consumed = 0;
  EXPECT_EQ(decoder.DecodeReply(frame, &r, &consumed), DecodeStatus::kError);
}

TEST(BinaryPreface, Checks) {
  uint8_t version = 0;
  EXPECT_EQ(DecodePreface(Vec("preface_v1"), &version), DecodeStatus::kComplete);
  EXPECT_EQ(version, 1);
  EXPECT_EQ(DecodePreface(std::string("\0K", 2), &version), DecodeStatus::kIncomplete);
  EXPECT_EQ(DecodePreface(std::string("\0X", 2), &version), DecodeStatus::kError);
  EXPECT_EQ(DecodePreface("*1\r\n", &version), DecodeStatus::kError);
  EXPECT_EQ(DecodePreface(std::string("\0KP\x07", 4), &version), DecodeStatus::kComplete);
  EXPECT_EQ(version, 7);
}

TEST(BinaryBodies, RoundTrips) {
  Decoder decoder;
  RequestView r;
  size_t consumed = 0;
  std::string buf;
  auto decode = [&] {
    EXPECT_EQ(decoder.DecodeRequest(buf, &r, &consumed), DecodeStatus::kComplete);
    buf.clear();
  };
  EncodeHello(&buf, 1, "name", std::string(32, 'p'), kHelloResp3);
  decode();
  HelloArgs hello;
  ASSERT_TRUE(ParseHello(r.body, &hello));
  EXPECT_EQ(hello.version, kVersion);
  EXPECT_EQ(hello.client_name, "name");
  EXPECT_EQ(hello.proof, std::string(32, 'p'));
  EncodeHello(&buf, 1, "name", "short");
  decode();
  EXPECT_FALSE(ParseHello(r.body, &hello));

  EncodeIncr(&buf, 2, "c", INT64_MIN, 5);
  decode();
  IncrArgs incr;
  ASSERT_TRUE(ParseIncr(r.body, &incr));
  EXPECT_EQ(incr.delta, INT64_MIN);
  EXPECT_EQ(incr.ttl_on_create_ms, 5u);

  EncodeExtend(&buf, 3, "l", "owner", 77);
  decode();
  LockArgs lock;
  ASSERT_TRUE(ParseLock(r.body, &lock));
  EXPECT_EQ(lock.owner, "owner");
  EXPECT_EQ(lock.ttl_ms, 77u);

  EncodeCommand(&buf, 4, {"SET", "", std::string("a\0b", 3)});
  decode();
  std::vector<std::string_view> args;
  ASSERT_TRUE(ParseCommand(r.body, 10, &args));
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[1], "");
  EXPECT_EQ(args[2], std::string_view("a\0b", 3));
  EXPECT_FALSE(ParseCommand(r.body, 2, &args));
  EXPECT_FALSE(ParseCommand(r.body.substr(0, r.body.size() - 1), 10, &args));
  // A huge count in a tiny body is refused without reserving.
  EXPECT_FALSE(ParseCommand(Unhex("ffffff7f"), SIZE_MAX, &args));
  EXPECT_FALSE(ParseCommand(Unhex("00000000"), 10, &args));
}

TEST(BinaryBodies, ReplyBodies) {
  Decoder decoder;
  ReplyView r;
  size_t consumed = 0;
  std::string moved = Vec("rep_moved");
  ASSERT_EQ(decoder.DecodeReply(moved, &r, &consumed), DecodeStatus::kComplete);
  Moved m;
  ASSERT_TRUE(ParseMoved(r.body, &m));
  EXPECT_EQ(m.slot, 12182);
  EXPECT_EQ(m.view_epoch, 7u);
  EXPECT_EQ(m.host, "10.0.0.12");
  EXPECT_EQ(m.port, 7001);

  std::string event = Vec("rep_event");
  ASSERT_EQ(decoder.DecodeReply(event, &r, &consumed), DecodeStatus::kComplete);
  Event e;
  ASSERT_TRUE(ParseEvent(r, &e));
  EXPECT_EQ(e.seq, 3u);
  EXPECT_FALSE(e.heartbeat);
  EXPECT_EQ(e.channel, "ch");
  EXPECT_EQ(e.message, "hi");
  std::string hb = Vec("rep_heartbeat");
  ASSERT_EQ(decoder.DecodeReply(hb, &r, &consumed), DecodeStatus::kComplete);
  ASSERT_TRUE(ParseEvent(r, &e));
  EXPECT_TRUE(e.heartbeat);

  std::string pre = Vec("server_preface");
  ASSERT_EQ(decoder.DecodeReply(pre, &r, &consumed), DecodeStatus::kComplete);
  EXPECT_EQ(r.flags, kReplyPreface);
  ServerPreface sp;
  ASSERT_TRUE(ParseServerPreface(r.body, &sp));
  EXPECT_TRUE(sp.auth_required);
  EXPECT_EQ(sp.nonce.size(), kNonceSize);

  Topology t{9, {{"a", 7001, {{0, 99}, {200, 300}}}, {"bb", 7002, {}}}, 0, 0, {}};
  std::string tb;
  EncodeTopologyReply(&tb, 3, t);
  ASSERT_EQ(decoder.DecodeReply(tb, &r, &consumed), DecodeStatus::kComplete);
  Topology back;
  ASSERT_TRUE(ParseTopology(r.body, &back));
  EXPECT_EQ(back.view_epoch, 9u);
  ASSERT_EQ(back.endpoints.size(), 2u);
  EXPECT_EQ(back.endpoints[0].slot_ranges.size(), 2u);
  EXPECT_EQ(back.endpoints[0].slot_ranges[1].second, 300);
  EXPECT_EQ(back.endpoints[1].host, "bb");
}

std::vector<std::string> Strings(const std::vector<std::string_view>& v) {
  return {v.begin(), v.end()};
}

TEST(BinaryTyped, MapsToCommands) {
  Decoder decoder;
  RequestView r;
  size_t consumed = 0;
  CommandScratch scratch;
  Status status;
  std::string error;
  auto map = [&](const std::string& frame) {
    EXPECT_EQ(decoder.DecodeRequest(frame, &r, &consumed), DecodeStatus::kComplete);
    bool ok = TypedToCommand(r, &scratch, &status, &error);
    return ok ? Strings(scratch.args) : std::vector<std::string>{"<" + error + ">"};
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(map(Vec("req_set_px_nx")), (V{"SET", "foo", "bar", "PX", "1500", "NX"}));
  EXPECT_EQ(map(Vec("req_get")), (V{"GET", "foo"}));
  EXPECT_EQ(map(Vec("req_ping")), (V{"PING"}));
  // ttl_on_create runs as a script: INCRBY and the TTL in one turn of the owning shard.
  V incr = map(Vec("req_incr"));
  ASSERT_EQ(incr.size(), 6u);
  EXPECT_EQ(incr[0], "EVAL");
  EXPECT_NE(incr[1].find("INCRBY"), std::string::npos);
  EXPECT_EQ((V{incr[2], incr[3], incr[4], incr[5]}), (V{"1", "ctr", "-2", "60000"}));
  std::string plain;
  EncodeIncr(&plain, 1, "ctr", 5);
  EXPECT_EQ(map(plain), (V{"INCRBY", "ctr", "5"}));
  std::string unlock, extend, del, exists, delprefix, ping_msg;
  EncodeUnlock(&unlock, 1, "lk", "me");
  EXPECT_EQ(map(unlock), (V{"UNLOCK", "lk", "me"}));
  EncodeExtend(&extend, 1, "lk", "me", 500);
  EXPECT_EQ(map(extend), (V{"LOCKEXTEND", "lk", "me", "500"}));
  EncodeDel(&del, 1, "k");
  EXPECT_EQ(map(del), (V{"DEL", "k"}));
  EncodeExists(&exists, 1, "k");
  EXPECT_EQ(map(exists), (V{"EXISTS", "k"}));
  EncodeDelPrefix(&delprefix, 1, "user:");
  EXPECT_EQ(map(delprefix), (V{"DELPREFIX", "user:"}));
  EncodePing(&ping_msg, 1, "hey");
  EXPECT_EQ(map(ping_msg), (V{"PING", "hey"}));
  EXPECT_EQ(map(Vec("req_expire_gt")), (V{"PEXPIRE", "foo", "10000", "GT"}));
  EXPECT_EQ(map(Vec("req_lock")), (V{"LOCK", "lk", "me", "30000"}));
  EXPECT_EQ(map(Vec("req_throttle")), (V{"CL.THROTTLE", "rl", "15", "30", "60", "1"}));
  EXPECT_EQ(map(Vec("req_fixed_window")), (V{"RATE.FIXED", "fw", "100", "1000", "1"}));
  EXPECT_EQ(map(Vec("req_publish")), (V{"PUBLISH", "ch", "hi"}));
  EXPECT_EQ(map(Vec("req_topology")), (V{"<ERR TOPOLOGY is handled by the connection>"}));
  std::string bad;
  EncodeRequest(&bad, 1, Op::kIncr, 0, "k", "short");
  EXPECT_EQ(map(bad), (V{"<ERR malformed INCR body>"}));
  bad.clear();
  EncodeSet(&bad, 1, "k", "v", 0, kSetNx | kSetXx);
  EXPECT_EQ(map(bad), (V{"<ERR syntax error>"}));
  bad.clear();
  EncodeSet(&bad, 1, "k", "v", 0, kSetGet | kSetKeepTtl);
  EXPECT_EQ(map(bad), (V{"SET", "k", "v", "GET", "KEEPTTL"}));
}

TEST(BinaryTyped, RespRepliesTranslate) {
  auto tr = [](Op op, std::string_view resp) {
    std::string out;
    EXPECT_TRUE(EncodeTypedReplyFromResp(&out, 7, op, 0, resp)) << resp;
    return out;
  };
  std::string expect;
  EncodeOk(&expect, 7);
  EXPECT_EQ(tr(Op::kSet, "+OK\r\n"), expect);
  expect.clear();
  EncodeNil(&expect, 7);
  EXPECT_EQ(tr(Op::kGet, "$-1\r\n"), expect);
  EXPECT_EQ(tr(Op::kGet, "_\r\n"), expect);
  expect.clear();
  EncodeOk(&expect, 7, "a\r\nb");
  EXPECT_EQ(tr(Op::kGet, "$4\r\na\r\nb\r\n"), expect);
  expect.clear();
  EncodeInt(&expect, 7, -12);
  EXPECT_EQ(tr(Op::kIncr, ":-12\r\n"), expect);
  expect.clear();
  EncodeErrorText(&expect, 7, Status::kWrongType, "WRONGTYPE Operation against a key");
  EXPECT_EQ(tr(Op::kIncr, "-WRONGTYPE Operation against a key\r\n"), expect);
  expect.clear();
  EncodeReply(&expect, 7, Status::kLocked, 0, "");
  EXPECT_EQ(tr(Op::kLock, "$-1\r\n"), expect);
  expect.clear();
  size_t start = BeginReply(&expect, 7, Status::kOk);
  for (int64_t v : {0, 16, 15, -1, 2}) PutI64(&expect, v);
  EndFrame(&expect, start);
  EXPECT_EQ(tr(Op::kThrottle, "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n"), expect);
  // Statuses a RESP error maps to.
  expect.clear();
  EncodeErrorText(&expect, 7, Status::kOom, "OOM command not allowed");
  EXPECT_EQ(tr(Op::kSet, "-OOM command not allowed\r\n"), expect);
  expect.clear();
  EncodeErrorText(&expect, 7, Status::kAuth, "NOAUTH Authentication required.");
  EXPECT_EQ(tr(Op::kGet, "-NOAUTH Authentication required.\r\n"), expect);
  expect.clear();
  EncodeErrorText(&expect, 7, Status::kFenced, "CLUSTERDOWN lease lost");
  EXPECT_EQ(tr(Op::kSet, "-CLUSTERDOWN lease lost\r\n"), expect);
  expect.clear();
  EncodeErrorText(&expect, 7, Status::kTooLarge,
                  "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
  EXPECT_EQ(tr(Op::kSet, "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"),
            expect);
  expect.clear();
  EncodeMoved(&expect, 7, 3999, 0, "10.0.0.12", 7001);
  EXPECT_EQ(tr(Op::kGet, "-MOVED 3999 10.0.0.12:7001\r\n"), expect);
  expect.clear();
  EncodeBusy(&expect, 7, 1);
  EXPECT_EQ(tr(Op::kGet, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"), expect);
  expect.clear();
  EncodeErrorText(&expect, 7, Status::kError, "MOVED garbage");
  EXPECT_EQ(tr(Op::kGet, "-MOVED garbage\r\n"), expect);
  std::string out;
  EXPECT_FALSE(EncodeTypedReplyFromResp(&out, 7, Op::kThrottle, 0, "*2\r\n:1\r\n$1\r\nx\r\n"));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(EncodeTypedReplyFromResp(&out, 7, Op::kGet, 0, "$5\r\nab\r\n"));
}

TEST(BinaryTyped, RespErrorsBecomeStatusesWithTheViewEpoch) {
  auto st = [](std::string_view resp, uint64_t epoch) {
    std::string out;
    EXPECT_TRUE(EncodeStatusFromRespError(&out, 9, resp, epoch)) << resp;
    return out;
  };
  auto tr_busy = [](std::string_view resp) {
    std::string out;
    EXPECT_TRUE(EncodeTypedReplyFromResp(&out, 9, Op::kLock, 0, resp)) << resp;
    return out;
  };
  std::string expect;
  EncodeMoved(&expect, 9, 12182, 42, "10.0.0.12", 7001);
  EXPECT_EQ(st("-MOVED 12182 10.0.0.12:7001\r\n", 42), expect);
  expect.clear();
  EncodeBusy(&expect, 9, 1);
  EXPECT_EQ(st("-TRYAGAIN Multiple keys request during rehashing of slot\r\n", 42), expect);
  expect.clear();
  EncodeErrorText(&expect, 9, Status::kFenced, "CLUSTERDOWN The cluster is down");
  EXPECT_EQ(st("-CLUSTERDOWN The cluster is down\r\n", 42), expect);
  expect.clear();
  EncodeErrorText(&expect, 9, Status::kError, "CROSSSLOT Keys in request don't hash");
  EXPECT_EQ(st("-CROSSSLOT Keys in request don't hash\r\n", 42), expect);
  // The lock quarantine says how long it lasts: BUSY passes it on; other TRYAGAINs say 1 ms.
  expect.clear();
  EncodeBusy(&expect, 9, 1331);
  EXPECT_EQ(st("-TRYAGAIN lock quarantine in effect for this slot, retry in 1331 ms\r\n", 0),
            expect);
  EXPECT_EQ(tr_busy("-TRYAGAIN lock quarantine in effect for this slot, retry in 1331 ms\r\n"),
            expect);
  for (std::string_view odd :
       {"-TRYAGAIN retry in 0 ms\r\n", "-TRYAGAIN retry in -5 ms\r\n",
        "-TRYAGAIN retry in x ms\r\n", "-TRYAGAIN retry in 5\r\n", "-TRYAGAIN retry in  ms\r\n"}) {
    expect.clear();
    EncodeBusy(&expect, 9, 1);
    EXPECT_EQ(st(odd, 0), expect) << odd;
  }
  expect.clear();
  EncodeBusy(&expect, 9, UINT32_MAX);
  EXPECT_EQ(st("-TRYAGAIN retry in 99999999999 ms\r\n", 0), expect);
  std::string out;
  EXPECT_FALSE(EncodeStatusFromRespError(&out, 9, "+OK\r\n", 1));
  EXPECT_FALSE(EncodeStatusFromRespError(&out, 9, "-MOVED no end", 1));
  EXPECT_FALSE(EncodeStatusFromRespError(&out, 9, "", 1));
  EXPECT_TRUE(out.empty());
}

// Random frames split at random points decode to the same sequence as in one piece.
TEST(BinaryDecode, RandomSplitsAgree) {
  std::mt19937 rng(7);
  std::string stream;
  std::vector<uint32_t> ids;
  for (uint32_t i = 1; i <= 300; ++i) {
    std::string key(rng() % 40, 'k');
    std::string value(rng() % 3000, 'v');
    if (i % 3 == 0) {
      EncodeSet(&stream, i, key, value, rng() % 1000);
    } else if (i % 3 == 1) {
      EncodeGet(&stream, i, key);
    } else {
      EncodeCommand(&stream, i, {"MSET", key, value});
    }
    ids.push_back(i);
  }
  Decoder decoder;
  std::string buffered;
  std::vector<uint32_t> seen;
  size_t pos = 0;
  while (pos < stream.size()) {
    size_t n = std::min<size_t>(1 + rng() % 700, stream.size() - pos);
    buffered.append(stream, pos, n);
    pos += n;
    while (true) {
      RequestView r;
      size_t consumed = 0;
      DecodeStatus s = decoder.DecodeRequest(buffered, &r, &consumed);
      if (s != DecodeStatus::kComplete) {
        ASSERT_EQ(s, DecodeStatus::kIncomplete);
        break;
      }
      seen.push_back(r.id);
      buffered.erase(0, consumed);
    }
  }
  EXPECT_EQ(seen, ids);
  EXPECT_TRUE(buffered.empty());
}

}  // namespace
}  // namespace keep::proto::binary
