#include "dataplane/cluster/handoff_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <thread>

#include "dataplane/cluster/handoff_codec.h"
#include "dataplane/core/byte_io.h"
#include "dataplane/core/slot_transfer.h"

namespace keep::cluster {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using std::chrono::seconds;

const core::SlotFunction kSlotOf(core::SlotHash::kKeyed, "cluster-secret");
constexpr int kShards = 2;

std::string K(const char* prefix, long i) {
  std::string key = prefix;
  key.append(std::to_string(i));
  return key;
}

// One member: a ShardGroup with its own control thread running an io_context and an engine.
struct Member {
  Member(const std::string& peer_secret, HandoffOptions options = {}, bool per_slot = false) {
    std::vector<shard::ShardOptions> shard_options(kShards);
    for (int i = 0; i < kShards; ++i) {
      shard_options[i].index = i;
      shard_options[i].count = kShards;
    }
    group = std::make_unique<shard::ShardGroup>(std::move(shard_options), kSlotOf,
                                                commands::ServerFacts{},
                                                std::map<std::string, std::string>{}, 100);
    group->tasks().Attach(io);
    group->Start();
    options.peer_secret = peer_secret;
    HandoffHooks hooks;
    hooks.on_slot_exporting = [this](uint16_t) {
      if (++exporting == 1 && stall_last_shard_ms > 0) {
        group->SubmitTo(
            kShards - 1,
            [ms = stall_last_shard_ms.load()](shard::ShardTaskContext&) {
              std::this_thread::sleep_for(std::chrono::milliseconds(ms));
            },
            [] {});
      }
    };
    hooks.on_slot_released = [this](uint16_t) { ++released; };
    hooks.on_export_aborted = [this](uint16_t) { ++aborted; };
    hooks.on_slot_importing = [this](uint16_t) { ++importing; };
    hooks.on_slot_owned = [this](uint16_t) { ++owned; };
    hooks.authorize_export = [this](const std::vector<uint16_t>&) { return !refuse; };
    if (per_slot) {
      hooks.classify_export = [this](uint16_t slot) {
        auto it = decisions.find(slot);
        return it == decisions.end() ? ExportDecision::kExport : it->second;
      };
    }
    engine = std::make_unique<HandoffEngine>(io, *group, kSlotOf, options, std::move(hooks));
    thread = std::thread([this] { io.run(); });
  }
  // Runs f on the control thread and returns its result.
  template <class F>
  auto OnControl(F f) {
    std::promise<decltype(f())> promise;
    auto future = promise.get_future();
    asio::post(io, [&] { promise.set_value(f()); });
    EXPECT_EQ(future.wait_for(seconds(60)), std::future_status::ready);
    return future.get();
  }
  // Runs f(ctx) on `shard` and returns its result.
  template <class F>
  auto OnShard(int shard, F f) {
    using R = std::invoke_result_t<F&, shard::ShardTaskContext&>;
    std::promise<R> promise;
    auto future = promise.get_future();
    asio::post(io, [&] {
      group->SubmitTo(shard, std::move(f), [&](R r) { promise.set_value(std::move(r)); });
    });
    EXPECT_EQ(future.wait_for(seconds(120)), std::future_status::ready);
    return future.get();
  }

  ~Member() {
    OnControl([this] {
      engine.reset();
      return 0;
    });
    guard.reset();
    io.stop();
    thread.join();
    group.reset();
  }

  tcp::endpoint Listen() {
    return OnControl([this] { return engine->Listen({asio::ip::make_address("127.0.0.1"), 0}); });
  }
  HandoffCounters Counters() {
    return OnControl([this] { return engine->counters(); });
  }

  struct PullResult {
    bool ok = false;
    PullDeclined declined;
    PullFailure failure;
    size_t slots_done = 0;
  };
  PullResult Pull(const tcp::endpoint& source, std::vector<uint16_t> slots) {
    std::promise<PullResult> promise;
    auto future = promise.get_future();
    auto done = std::make_shared<size_t>(0);
    asio::post(io, [&, done] {
      engine->Pull(
          source, std::move(slots), [done](uint16_t) { ++*done; },
          [&, done](const PullDeclined& declined) {
            PullResult result;
            result.ok = true;
            result.declined = declined;
            result.slots_done = *done;
            promise.set_value(result);
          },
          [&, done](const PullFailure& failure) {
            PullResult result;
            result.failure = failure;
            result.slots_done = *done;
            promise.set_value(result);
          });
    });
    EXPECT_EQ(future.wait_for(seconds(300)), std::future_status::ready);
    return future.get();
  }

  size_t Size() {
    size_t total = 0;
    for (int s = 0; s < kShards; ++s) {
      total += OnShard(s, [](shard::ShardTaskContext& ctx) { return ctx.store.Size(); });
    }
    return total;
  }

  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard = asio::make_work_guard(io);
  std::unique_ptr<shard::ShardGroup> group;
  std::unique_ptr<HandoffEngine> engine;
  std::thread thread;
  std::atomic<int> exporting{0}, released{0}, aborted{0}, importing{0}, owned{0};
  std::atomic<bool> refuse{false};
  // When set, an export's start occupies the last shard that long (a slow task, a long drop).
  std::atomic<int> stall_last_shard_ms{0};
  // Per-slot decisions (per_slot members only); set before the pull that reads them.
  std::map<uint16_t, ExportDecision> decisions;
};

// ---------------------------------------------------------------------------------------------
// The data set: key i has a kind, a value and a TTL derived from i.

enum Kind { kString, kInteger, kLock, kBinary, kLarge };
Kind KindOf(long i) {
  switch (i % 10) {
    case 4:
    case 5:
      return kInteger;
    case 6:
    case 7:
      return kLock;
    case 8:
      return kBinary;
    case 9:
      return kLarge;
    default:
      return kString;
  }
}
std::string ValueOf(long i) {
  switch (KindOf(i)) {
    case kInteger:
      return std::to_string(i * 7 - 3);
    case kLock: {
      uint64_t token = static_cast<uint64_t>(i) + 1;
      std::string v(sizeof(token), '\0');
      std::memcpy(v.data(), &token, sizeof(token));
      return v.append(K("owner-", i));
    }
    case kBinary: {
      std::string v = K("bin\0\xff", i);
      v[3] = '\0';
      return v;
    }
    case kLarge:
      return std::string(i % 1000 == 9 ? 3000 : 300, static_cast<char>('a' + i % 26));
    case kString:
      break;
  }
  return K("value-", i);
}
int64_t TtlOf(long i) {
  if (KindOf(i) == kLock) return 300'000;
  switch (i % 3) {
    case 0:
      return 600'000;
    case 2:
      return 3'600'000;
  }
  return core::kNoExpiry;
}
bool Moves(uint32_t slot) { return slot % 8 != 7; }

TEST(HandoffEngineTest, PullsAMillionKeysWithTtlsAndLocks) {
  const long kMoving = 1'000'000;
  Member owner("peer-secret");
  Member gainer("peer-secret");
  const tcp::endpoint endpoint = owner.Listen();

  // Key indices by shard (same shard count on both sides), and which of them move.
  std::vector<std::vector<long>> by_shard(kShards);
  std::vector<char> moves;
  long moving = 0;
  for (long i = 0; moving < kMoving; ++i) {
    uint32_t slot = kSlotOf(K("key:", i));
    moves.push_back(Moves(slot));
    moving += Moves(slot);
    by_shard[slot % kShards].push_back(i);
  }
  const long total = static_cast<long>(moves.size());
  std::vector<int64_t> written_deadline(total, core::kNoExpiry);
  int64_t owner_offset[kShards];
  for (int s = 0; s < kShards; ++s) {
    const std::vector<long>& keys = by_shard[s];
    for (size_t begin = 0; begin < keys.size(); begin += 50000) {
      const size_t end = std::min(keys.size(), begin + 50000);
      owner_offset[s] = owner.OnShard(s, [&, begin, end](shard::ShardTaskContext& ctx) {
        for (size_t j = begin; j < end; ++j) {
          const long i = keys[j];
          std::string key = K("key:", i);
          core::Store::Ref ref = ctx.store.Insert(
              key, ValueOf(i),
              KindOf(i) == kLock ? core::ValueType::kLock : core::ValueType::kString);
          if (TtlOf(i) != core::kNoExpiry) {
            ctx.store.SetExpireAt(ref, ctx.now_ms + TtlOf(i));
            written_deadline[i] = ctx.now_ms + TtlOf(i);
          }
        }
        return ctx.clock.offset_ms();
      });
    }
    owner.OnShard(s, [s](shard::ShardTaskContext& ctx) {
      for (uint32_t slot = s; slot < core::kSlotCount; slot += kShards) {
        ctx.slots[slot].fencing_token = 1000 + slot;
      }
      return 0;
    });
  }
  // A gainer slot whose counter is already higher keeps it.
  const uint32_t high_slot = 4;
  gainer.OnShard(high_slot % kShards, [](shard::ShardTaskContext& ctx) {
    ctx.slots[high_slot].fencing_token = 1'000'000;
    return 0;
  });
  ASSERT_EQ(owner.Size(), static_cast<size_t>(total));

  std::vector<uint16_t> slots;
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    if (Moves(slot)) slots.push_back(static_cast<uint16_t>(slot));
  }
  const auto start = std::chrono::steady_clock::now();
  Member::PullResult result = gainer.Pull(endpoint, slots);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(result.ok) << result.failure.reason;
  EXPECT_EQ(result.slots_done, slots.size());
  const int64_t pull_ms = static_cast<int64_t>(secs * 1000) + 1;

  HandoffCounters in = gainer.Counters();
  HandoffCounters out = owner.Counters();
  EXPECT_EQ(in.keys_imported, static_cast<uint64_t>(kMoving));
  EXPECT_EQ(out.keys_exported, static_cast<uint64_t>(kMoving));
  EXPECT_EQ(out.keys_dropped, static_cast<uint64_t>(kMoving));
  EXPECT_EQ(in.slots_imported, slots.size());
  EXPECT_EQ(out.slots_released, slots.size());
  EXPECT_EQ(in.rejected_messages + out.rejected_messages, 0u);
  EXPECT_EQ(owner.exporting, static_cast<int>(slots.size()));
  EXPECT_EQ(owner.released, static_cast<int>(slots.size()));
  EXPECT_EQ(owner.aborted, 0);
  EXPECT_EQ(gainer.importing, static_cast<int>(slots.size()));
  EXPECT_EQ(gainer.owned, static_cast<int>(slots.size()));
  std::printf(
      "handoff: %ld keys, %.1f MB of records in %.3f s: %.0f keys/s, %.1f MB/s; longest shard "
      "task: export %lld us, import %lld us, drop %lld us; mean export task %lld us (%llu), "
      "import task %lld us (%llu)\n",
      kMoving, in.bytes_imported / 1e6, secs, kMoving / secs, in.bytes_imported / 1e6 / secs,
      static_cast<long long>(out.longest_export_task_ns / 1000),
      static_cast<long long>(in.longest_import_task_ns / 1000),
      static_cast<long long>(out.longest_drop_task_ns / 1000),
      static_cast<long long>(out.export_task_ns / 1000 / std::max<uint64_t>(1, out.export_tasks)),
      static_cast<unsigned long long>(out.export_tasks),
      static_cast<long long>(in.import_task_ns / 1000 / std::max<uint64_t>(1, in.import_tasks)),
      static_cast<unsigned long long>(in.import_tasks));

  // Every moved key is on the gainer, with its value, type, and an expiry that moved later by at
  // most the transfer time and never earlier (compared on the shared monotonic clock).
  for (int s = 0; s < kShards; ++s) {
    std::string problem = gainer.OnShard(s, [&, s](shard::ShardTaskContext& ctx) {
      const int64_t offset = ctx.clock.offset_ms();
      for (long i : by_shard[s]) {
        if (!moves[i]) continue;
        std::string key = K("key:", i);
        core::Store::Ref ref = ctx.store.Find(key);
        if (ref == nullptr) return "missing " + key;
        if (ctx.store.Value(ref) != ValueOf(i)) return "value of " + key;
        if ((ctx.store.Type(ref) == core::ValueType::kLock) != (KindOf(i) == kLock)) {
          return "type of " + key;
        }
        const int64_t deadline = ctx.store.ExpireAt(ref);
        if (TtlOf(i) == core::kNoExpiry) {
          if (deadline != core::kNoExpiry) return "ttl of " + key;
          continue;
        }
        const int64_t written = written_deadline[i] - owner_offset[s];
        const int64_t now = deadline - offset;
        if (now < written) return "ttl shrank for " + key;
        if (now > written + pull_ms + 50) return "ttl grew beyond the transfer for " + key;
      }
      return std::string();
    });
    EXPECT_EQ(problem, "");
  }
  for (uint16_t slot : {uint16_t{0}, uint16_t{1}, uint16_t{high_slot}, uint16_t{16382}}) {
    if (!Moves(slot)) continue;
    uint64_t token = gainer.OnShard(slot % kShards, [slot](shard::ShardTaskContext& ctx) {
      return ctx.slots[slot].fencing_token;
    });
    EXPECT_EQ(token, slot == high_slot ? 1'000'000u : 1000u + slot) << slot;
  }
  // The owner dropped exactly the moved keys.
  EXPECT_EQ(owner.Size(), static_cast<size_t>(total - kMoving));
  EXPECT_EQ(gainer.Size(), static_cast<size_t>(kMoving));
  for (int s = 0; s < kShards; ++s) {
    std::string problem = owner.OnShard(s, [&, s](shard::ShardTaskContext& ctx) {
      for (long i : by_shard[s]) {
        const bool present = ctx.store.Find(K("key:", i)) != nullptr;
        if (present == static_cast<bool>(moves[i])) return K("owner key:", i);
      }
      return std::string();
    });
    EXPECT_EQ(problem, "");
  }
}

// A small data set for the failure tests: 2000 keys, all in slots that move.
std::vector<uint16_t> Populate(Member& member, int keys) {
  std::vector<uint16_t> slots;
  std::vector<bool> seen(core::kSlotCount);
  for (int i = 0; i < keys; ++i) {
    std::string key = K("k", i);
    uint32_t slot = kSlotOf(key);
    member.OnShard(slot % kShards, [key](shard::ShardTaskContext& ctx) {
      return ctx.store.Insert(key, "v") != nullptr;
    });
    if (!seen[slot]) slots.push_back(static_cast<uint16_t>(slot));
    seen[slot] = true;
  }
  return slots;
}

TEST(HandoffEngineTest, WrongSecretIsRejectedAndNothingMoves) {
  Member owner("peer-secret");
  Member intruder("not-the-secret");
  tcp::endpoint endpoint = owner.Listen();
  std::vector<uint16_t> slots = Populate(owner, 500);
  Member::PullResult result = intruder.Pull(endpoint, slots);
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.failure.failed.size(), slots.size());
  EXPECT_EQ(owner.Size(), 500u);
  EXPECT_EQ(intruder.Size(), 0u);
  EXPECT_EQ(owner.exporting, 0);
  EXPECT_GE(owner.Counters().rejected_messages, 1u);
  EXPECT_EQ(intruder.importing, static_cast<int>(slots.size()));
  EXPECT_EQ(intruder.owned, 0);
}

// The gainer's every read has a deadline; an owner whose shard is busy for several of them
// still sends something (an empty BATCH) so the pull waits for it instead of failing.
TEST(HandoffEngineTest, AnOwnerShardBusyPastTheMessageDeadlineKeepsThePullAlive) {
  HandoffOptions options;
  options.message_timeout = std::chrono::milliseconds(300);
  Member owner("s", options);
  Member gainer("s", options);
  tcp::endpoint endpoint = owner.Listen();
  std::vector<uint16_t> slots = Populate(owner, 2000);
  owner.stall_last_shard_ms = 1500;
  const auto start = std::chrono::steady_clock::now();
  Member::PullResult result = gainer.Pull(endpoint, slots);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(result.ok) << result.failure.reason;
  EXPECT_GE(took, std::chrono::milliseconds(1500));
  EXPECT_EQ(result.slots_done, slots.size());
  EXPECT_EQ(gainer.Size(), 2000u);
  EXPECT_EQ(owner.Size(), 0u);
  EXPECT_EQ(gainer.Counters().deadlines_expired + owner.Counters().deadlines_expired, 0u);
}

TEST(HandoffEngineTest, ConnectFailureAndRefusalFailEverySlot) {
  Member owner("s");
  Member gainer("s");
  tcp::endpoint endpoint = owner.Listen();
  std::vector<uint16_t> slots = Populate(owner, 200);
  owner.refuse = true;
  Member::PullResult refused = gainer.Pull(endpoint, slots);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.failure.reason.find("owner error"), std::string::npos)
      << refused.failure.reason;
  EXPECT_EQ(refused.failure.failed.size(), slots.size());
  EXPECT_EQ(owner.Size(), 200u);

  // Nothing listens on this port any more.
  tcp::endpoint closed;
  {
    asio::io_context io;
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    closed = acceptor.local_endpoint();
  }
  Member::PullResult failed = gainer.Pull(closed, slots);
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.failure.failed.size(), slots.size());
  EXPECT_EQ(gainer.Counters().pulls_failed, 2u);
  EXPECT_FALSE(gainer.Pull(endpoint, {}).ok);  // an empty or repeated list is refused locally
  EXPECT_FALSE(gainer.Pull(endpoint, {5, 5}).ok);
}

TEST(HandoffEngineTest, DeclinedSlotsAreReportedAndOnlyTheRestMoves) {
  Member owner("s", {}, /*per_slot=*/true);
  Member gainer("s");
  tcp::endpoint endpoint = owner.Listen();
  std::vector<uint16_t> slots = Populate(owner, 600);
  ASSERT_GE(slots.size(), 30u);
  std::vector<uint16_t> not_held(slots.begin(), slots.begin() + 10);
  std::vector<uint16_t> not_yet(slots.begin() + 10, slots.begin() + 20);
  for (uint16_t slot : not_held) owner.decisions[slot] = ExportDecision::kNotHeld;
  for (uint16_t slot : not_yet) owner.decisions[slot] = ExportDecision::kNotYet;
  size_t kept = 0;  // keys in declined slots stay with the owner
  for (int i = 0; i < 600; ++i) {
    uint16_t slot = static_cast<uint16_t>(kSlotOf(K("k", i)));
    kept += owner.decisions.count(slot);
  }
  Member::PullResult result = gainer.Pull(endpoint, slots);
  ASSERT_TRUE(result.ok) << result.failure.reason;
  EXPECT_EQ(result.slots_done, slots.size() - 20);
  auto sorted = [](std::vector<uint16_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(result.declined.not_held), sorted(not_held));
  EXPECT_EQ(sorted(result.declined.not_yet), sorted(not_yet));
  EXPECT_EQ(owner.Size(), kept);
  EXPECT_EQ(gainer.Size(), 600u - kept);
  EXPECT_EQ(owner.exporting, static_cast<int>(slots.size() - 20));

  // Every slot declined: the pull completes at once with nothing moved.
  Member::PullResult none = gainer.Pull(endpoint, not_yet);
  ASSERT_TRUE(none.ok) << none.failure.reason;
  EXPECT_EQ(sorted(none.declined.not_yet), sorted(not_yet));
  EXPECT_EQ(none.slots_done, 0u);
  EXPECT_EQ(owner.Size(), kept);
}

// Raw bytes against the owner's port: each bad connection is closed and counted, and a proper
// pull still works afterwards.
TEST(HandoffEngineTest, GarbageForgedReplayedTruncatedAndOversizedMessagesAreRejected) {
  HandoffOptions options;
  options.max_message_bytes = 1 << 20;
  options.message_timeout = std::chrono::milliseconds(2000);
  Member owner("peer-secret", options);
  tcp::endpoint endpoint = owner.Listen();
  std::vector<uint16_t> slots = Populate(owner, 300);

  asio::io_context io;
  // Sends `bytes`, then reads until the owner closes; returns what it sent back.
  auto exchange = [&](const std::string& bytes, bool half_close) {
    tcp::socket socket(io);
    socket.connect(endpoint);
    asio::write(socket, asio::buffer(bytes));
    if (half_close) socket.shutdown(tcp::socket::shutdown_send);
    std::string reply;
    boost::system::error_code error;
    char buf[4096];
    for (;;) {
      size_t n = socket.read_some(asio::buffer(buf), error);
      if (error) break;
      reply.append(buf, n);
    }
    return reply;
  };
  const HandoffKey hello_key = DeriveHelloKey("peer-secret");
  HelloBody hello;
  hello.nonce = RandomNonce();
  const std::string good_hello = SealMessage(hello_key, HandoffType::kHello, 0, EncodeHello(hello));

  uint64_t rejected = owner.Counters().rejected_messages;
  // Garbage.
  exchange("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(100, '\xff'), false);
  EXPECT_GT(owner.Counters().rejected_messages, rejected);
  rejected = owner.Counters().rejected_messages;
  // Oversized: a length field beyond the limit, with nothing behind it.
  std::string oversized;
  core::PutU32(&oversized, 1u << 30);
  exchange(oversized, false);
  EXPECT_GT(owner.Counters().rejected_messages, rejected);
  rejected = owner.Counters().rejected_messages;
  // Truncated: half a HELLO, then the sender stops.
  exchange(good_hello.substr(0, good_hello.size() / 2), true);
  EXPECT_GT(owner.Counters().rejected_messages, rejected);
  rejected = owner.Counters().rejected_messages;
  // Forged: a HELLO sealed with another secret.
  exchange(SealMessage(DeriveHelloKey("guess"), HandoffType::kHello, 0, EncodeHello(hello)), false);
  EXPECT_GT(owner.Counters().rejected_messages, rejected);
  rejected = owner.Counters().rejected_messages;

  // Replayed: a PULL properly sealed for an earlier connection's nonces, sent on a new one (the
  // HELLO itself may be replayed: it grants nothing without the session keys).
  HandoffKeys old_keys;
  DeriveSessionKeys("peer-secret", hello.nonce, RandomNonce(), &old_keys);
  std::string replayed_pull =
      SealMessage(old_keys.client_to_server, HandoffType::kPull, 1, EncodeSlotList(slots));
  std::string reply = exchange(good_hello + replayed_pull, false);
  EXPECT_FALSE(reply.empty());  // the HELLO_ACK
  EXPECT_GT(owner.Counters().rejected_messages, rejected);
  rejected = owner.Counters().rejected_messages;

  // Reordered: the right keys but the HELLO's sequence number again.
  {
    tcp::socket socket(io);
    socket.connect(endpoint);
    asio::write(socket, asio::buffer(good_hello));
    std::string ack(kHandoffLengthBytes, '\0');
    asio::read(socket, asio::buffer(ack.data(), ack.size()));
    uint32_t length = static_cast<uint32_t>(core::LoadLe(ack.data(), 4));
    ack.resize(kHandoffLengthBytes + length);
    asio::read(socket, asio::buffer(ack.data() + kHandoffLengthBytes, length));
    HelloBody server;
    ASSERT_TRUE(ParseHello(UnverifiedBody(ack), &server));
    HandoffKeys keys;
    DeriveSessionKeys("peer-secret", hello.nonce, server.nonce, &keys);
    OpenedMessage opened;
    ASSERT_EQ(OpenMessage(keys.server_to_client, 0, ack, options.max_message_bytes, &opened),
              OpenStatus::kOk);
    asio::write(socket, asio::buffer(SealMessage(keys.client_to_server, HandoffType::kPull, 0,
                                                 EncodeSlotList(slots))));
    boost::system::error_code error;
    char buf[64];
    while (!error) socket.read_some(asio::buffer(buf), error);
  }
  EXPECT_GT(owner.Counters().rejected_messages, rejected);

  // Nothing was exported or lost, and a proper pull still works.
  EXPECT_EQ(owner.exporting, 0);
  EXPECT_EQ(owner.Size(), 300u);
  Member gainer("peer-secret");
  Member::PullResult result = gainer.Pull(endpoint, slots);
  EXPECT_TRUE(result.ok) << result.failure.reason;
  EXPECT_EQ(gainer.Size(), 300u);
  EXPECT_EQ(owner.Size(), 0u);
}

// The gainer dies mid-transfer (here: its engine stops): the owner aborts the slots not
// acknowledged and keeps their keys; the gainer drops what it had imported of them.
TEST(HandoffEngineTest, AbortedPullLeavesTheOwnerWhole) {
  HandoffOptions options;
  options.batch_budget_bytes = 512;  // many small batches, so the stop lands mid-transfer
  Member owner("s", options);
  Member gainer("s");
  tcp::endpoint endpoint = owner.Listen();
  std::vector<uint16_t> slots = Populate(owner, 3000);
  std::promise<PullFailure> failed;
  auto future = failed.get_future();
  asio::post(gainer.io, [&] {
    gainer.engine->Pull(
        endpoint, slots, [](uint16_t) {}, [&](const PullDeclined&) { failed.set_value({}); },
        [&](const PullFailure& failure) { failed.set_value(failure); });
  });
  // Stop the gainer as soon as some keys arrived.
  for (int i = 0; i < 2000 && gainer.Counters().keys_imported == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  gainer.OnControl([&] {
    gainer.engine->Stop();
    return 0;
  });
  ASSERT_EQ(future.wait_for(seconds(30)), std::future_status::ready);
  PullFailure failure = future.get();
  EXPECT_FALSE(failure.reason.empty());
  // Give the owner a moment to notice the closed connection.
  for (int i = 0; i < 2000 && owner.Counters().exports_failed == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  HandoffCounters out = owner.Counters();
  EXPECT_EQ(out.exports_failed, 1u);
  // Every slot is either aborted (keys kept by the owner) or released (keys on the gainer).
  EXPECT_EQ(owner.aborted + owner.released, static_cast<int>(slots.size()));
  EXPECT_EQ(owner.Size() + gainer.Size(), 3000u);
}

}  // namespace
}  // namespace keep::cluster
