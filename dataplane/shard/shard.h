// A shard: one thread that owns a slice of the keys, their store, and the connections it
// accepted, running a level-triggered epoll loop (design §2.2). A turn reads every ready
// connection, executes every complete request (forwarding those owned by other shards over SPSC
// rings), drains the rings from other shards, then sends each connection's replies in one call.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dataplane/commands/command.h"
#include "dataplane/commands/command_table.h"
#include "dataplane/commands/plan.h"
#include "dataplane/commands/shard_services.h"
#include "dataplane/core/clock.h"
#include "dataplane/core/slot.h"
#include "dataplane/core/slot_state.h"
#include "dataplane/core/store.h"
#include "dataplane/shard/connection.h"
#include "dataplane/shard/io_buffer.h"
#include "dataplane/shard/socket_batch.h"
#include "dataplane/shard/spsc_ring.h"
#include "telemetry/cycle_clock.h"
#include "telemetry/shard_metrics.h"

namespace keep::shard {

class ShardGroup;
struct Gather;

// A forwarded request's place on the shard that sent it: the connection and the reply slot
// that holds its place in the connection's order.
struct Forwarded {
  Connection* conn;
  PendingReply* slot;
};

// Requests forwarded to the shard that owns their keys, and their replies on the way back. The
// object makes the round trip and returns to the pool of the shard that sent it, so pools are
// single-threaded. Whether it is on its way back follows from who holds it: it never goes to the
// shard that sent it, so at its origin it is a reply.
//
// Its fields are grouped by the shard that writes them, each group on cache lines of its own: at
// pipeline 1 a batch holds a request or two, and every line one shard writes and the other reads
// crosses between their CPUs once per round trip, while a line both write crosses twice. (In
// declaration order at 16-byte alignment, 456 bytes moved four or five lines each way. Grouped,
// two shards spent 11% less user CPU per request at SET pipeline 16 in six alternating pairs of
// 3 s runs; at pipeline 1 the difference was inside the runs' spread.)
struct alignas(64) Envelope {
  // Written by the origin before the push, read by the target.
  uint16_t origin = 0;
  uint16_t target = 0;
  // A batch (gather == nullptr): the single-key requests one shard forwarded to another during a
  // turn, back to back in one buffer, and their replies back to back in another. Per request the
  // two shards then share a few bytes of two sequential buffers, not an object of its own and
  // its heap blocks: every cache line a request touches on both shards costs a transfer between
  // cores, and those transfers, not instructions, were most of the forwarding cost.
  Gather* gather = nullptr;
  IoBuffer requests;  // per request: ForwardHeader, argument lengths, arguments

  // Connections handed over with the batch (Shard::HandOver): every reply each one is owed is in
  // the batch, so the target writes the connection's whole output to its socket itself, the
  // origin's own replies (`local`) interleaved with the batch's, and the origin need not be woken
  // to pass the replies on. What the target could not send comes back in `unsent`.
  struct Handover {
    int32_t fd;
    uint32_t first_request;  // the connection's requests: [first_request, +request_count)
    uint32_t request_count;
    uint32_t first_segment;  // request_count + 1 ends in `local_ends`: before each reply, after all
    size_t unsent_begin = 0;  // written by the target: a range of `unsent`
    size_t unsent_end = 0;
  };
  std::vector<Handover> handovers;
  std::string local;
  std::vector<uint32_t> local_ends;

  // One part of a split or broadcast request, as the origin sent it.
  const commands::CommandSpec* spec = nullptr;
  uint64_t caller_id = 0;
  uint64_t cursor_position = 0;
  int resp_version = 2;
  bool as_part = false;  // the handler gets a PartResult
  std::string arg_bytes;
  std::vector<uint32_t> arg_ends;

  // Written by the target, read by the origin when the envelope is back. The origin leaves them
  // as they are and the target clears only what holds something, so a line neither needs to
  // change (`unsent`, a batch's `args` and `result`) stays in both CPUs' caches.
  //
  // Whether pushing this envelope back wakes its origin: not for a batch whose replies were all
  // written to their sockets by the target (RunBatch), which leaves the origin nothing to send.
  alignas(64) bool wake_origin = true;
  std::string replies;  // a handed-over connection's replies take no room here
  // Where each reply ends in `replies`. 64-bit: a batch of GETs of values near the 512 MB bulk
  // limit passes 4 GiB of replies.
  std::vector<size_t> reply_ends;
  std::string unsent;
  std::vector<std::string_view> args;  // a part's arguments, unpacked
  commands::PartResult result;

  // The origin's own.
  alignas(64) std::vector<Forwarded> waiting;  // where each reply goes, in request order
  size_t accounted_bytes = 0;  // batch buffer capacity counted in the origin's memory use

  size_t request_count() const { return gather != nullptr ? 1 : waiting.size(); }
};

// The originating side of a split or broadcast request: waits for every part, then combines.
struct Gather {
  Connection* conn = nullptr;
  PendingReply* slot = nullptr;
  const commands::CommandSpec* spec = nullptr;
  commands::Routing routing = commands::Routing::kAllShards;
  int cursor_shard = 0;  // kCursorShard: the one shard that runs the part
  int resp_version = 2;
  int outstanding = 0;
  std::vector<commands::PartResult*> parts;  // indexed by shard
  std::vector<Envelope*> envelopes;
  std::vector<std::unique_ptr<commands::PartResult>> spare_results;
  std::vector<uint16_t> key_part;
  std::vector<uint32_t> key_pos;
  std::string arg_bytes;
  std::vector<uint32_t> arg_ends;
  std::vector<std::string_view> args;
};

struct ShardOptions {
  int index = 0;
  int count = 1;
  int pin_cpu = -1;
  std::vector<int> listen_fds;  // client port (SO_REUSEPORT member) and shard port
  proto::RespLimits resp_limits;
  commands::Limits command_limits;
  int64_t client_output_buffer_limit = 256ll * 1024 * 1024;
  int64_t client_query_buffer_limit = 1024ll * 1024 * 1024;
  proto::binary::Limits binary_limits;
  core::KeyClassTable key_classes;
  bool io_uring = true;  // SocketBatch: io_uring where the kernel allows it
};

class Shard final : public commands::ShardServices {
 public:
  Shard(ShardGroup* group, ShardOptions options);
  ~Shard() override;

  void Start();
  void Join();
  // Wakes the shard if it is parked; any thread.
  void Wake();

  int index() const { return options_.index; }

  // commands::ShardServices
  void CollectStats(commands::ShardStats* stats) override;
  void AppendClientList(std::string* out, const std::vector<uint64_t>& ids) override;
  int KillClients(const commands::ClientKillFilter& filter) override;
  void RequestShutdown() override;
  const commands::ServerFacts& facts() override;
  void ConfigGet(std::string_view pattern,
                 std::vector<std::pair<std::string, std::string>>* out) override;
  std::string ConfigSet(std::string_view name, std::string_view value) override;
  void ResetStats() override;
  bool OwnsKey(std::string_view key) override;
  void Subscribe(const commands::ClientState& client, commands::PubSubKind kind,
                 std::string_view name) override;
  void Unsubscribe(const commands::ClientState& client, commands::PubSubKind kind,
                   std::string_view name) override;
  int64_t Publish(commands::PubSubKind kind, std::string_view channel,
                  std::string_view message) override;
  void ActiveSubscriptions(commands::PubSubKind kind, std::vector<std::string>* out) override;
  int64_t SubscriberCount(commands::PubSubKind kind, std::string_view name) override;

 private:
  friend class ShardGroup;

  void Run();
  void Turn(int timeout_ms);
  void Accept(int listen_fd);
  // Reads what a ready connection sent; RunReadInput then executes what the turn's reads brought.
  // Queues a read of a ready connection in sockets_; FinishReads makes the batch's reads and
  // hands what they brought to read_input_ (FinishRead), RunReadInput executes it.
  void OnReadable(Connection* conn);
  void FinishReads();
  void FinishRead(Connection* conn, char* target, ssize_t n);
  void RunReadInput();
  void ProcessInput(Connection* conn, std::string_view data, bool from_scratch);
  // `arg1_slot`: the slot of args[1] if already computed (see commands::PlanRequest).
  void Dispatch(Connection* conn, std::span<const std::string_view> args,
                uint32_t arg1_slot = commands::kNoSlot);
  void RunPart(const commands::CommandSpec* spec, std::span<const std::string_view> args,
               int resp_version, commands::PartResult* result, bool as_part, uint64_t caller_id,
               uint64_t cursor_position, uint32_t slot);
  void StartGather(Connection* conn, std::span<const std::string_view> args);
  void SendPart(Gather* gather, int target, std::span<const std::string_view> args, bool as_part,
                uint64_t cursor_position);
  void FinishGather(Gather* gather);
  void OnEnvelope(Envelope* envelope);
  void DrainInbound();
  // Forwards a single-key request to `target` in this turn's batch for it.
  void Forward(Connection* conn, int target, std::span<const std::string_view> args);
  // Runs a batch of forwarded requests and turns it into their replies.
  void RunBatch(Envelope* batch);
  // Hands each reply of a batch that came back to its connection.
  void DeliverBatch(Envelope* batch);
  // Settles a connection whose owed replies the batch's target wrote to its socket (HandOver).
  void SettleHandover(Envelope* batch, const Envelope::Handover& handover);
  // Queues an envelope for `target` behind everything forwarded to it before.
  void Enqueue(int target, Envelope* envelope);
  void SealBatch(int target);
  // Hands each connection whose owed replies are all in `batch` over to the batch's target.
  void HandOver(Envelope* batch);
  // The target's side: writes the handed-over connections' output once the batch has run.
  void SendHandovers(Envelope* batch);
  // Pushes the turn's envelopes to their rings; the shards to wake are woken by WakeOwed.
  void FlushOutbound();
  void WakeOwed();
  bool HasOutbound() const;
  std::string* ReplyTarget(Connection* conn);
  void FlushSlots(Connection* conn);
  // Moves the ready replies at the front of the connection's order to its output.
  void FlushReadySlots(Connection* conn, bool was_paused);
  void MarkWrite(Connection* conn);
  // This connection's output is being written by another shard and the request about to run will
  // produce output behind it: have that shard wake this one when it is done.
  void AwaitDirect(Connection* conn);
  // Output another shard wrote directly (or tried to) is back.
  void DirectDone(Connection* conn);
  void WriteAll();
  // What follows a connection's send (`n`: its result, 0 when it had nothing to send).
  void Write(Connection* conn, ssize_t n);
  bool InputPaused(const Connection* conn) const;
  // Input is read and executed: not closed, not closing, not paused.
  bool Admitting(const Connection* conn) const;
  void UpdateInterest(Connection* conn);
  void Close(Connection* conn, const char* reason);
  void MaybeFree(Connection* conn);
  // `background_deadline`: when the turn's background work (expiry, defragmentation) must stop.
  void Timers(uint64_t background_deadline);
  // Runs a command's handler, counting it and its latency in this shard's metrics.
  void Execute(const commands::CommandSpec* spec, commands::CommandContext& ctx);
  // Copies this shard's figures into its metrics for the scrape (from the timer).
  void PublishMetrics();
  void EnforceMemoryCap();
  // The expiry sweep and defragmentation for up to `budget` (entries examined, records moved),
  // in slices, none started at or after `deadline` (CycleClock ticks).
  size_t ExpireFor(size_t budget, uint64_t deadline, size_t* examined);
  void DefragFor(size_t budget, uint64_t deadline);
  void AccountBuffers(Connection* conn);
  // What this shard holds besides its store: connections' and batches' buffers.
  size_t BufferBytes() const { return connection_bytes_ + envelope_bytes_; }
  void BeginStop();
  bool Drained() const;
  // Cluster mode (shard_cluster.cc): whether this member serves the planned request's slot(s);
  // if not, answers CLUSTERDOWN, MOVED, TRYAGAIN or CROSSSLOT and returns false.
  bool ClusterAdmits(Connection* conn);
  // A newly published view: apply its lock quarantines to the slots this shard owns.
  void ApplyView();

  Envelope* NewEnvelope();
  void Recycle(Envelope* envelope);
  // Frees the envelope's buffers above `keep_capacity` and accounts what it keeps.
  void ShrinkBuffers(Envelope* envelope, size_t keep_capacity);
  PendingReply* NewSlot();
  void Recycle(PendingReply* slot);
  // A reply another shard will produce: its place in the connection's order.
  PendingReply* Owe(Connection* conn);
  // Moves the connection's held replies up to `up_to` (an offset into `held`) on to `out`.
  void MoveHeld(Connection* conn, size_t up_to);
  // The binary protocol (binary_session.cc).
  void BinaryInput(Connection* conn, std::string_view data, bool from_scratch);
  bool BinaryPreface(Connection* conn, std::string_view data, size_t* offset);
  void BinaryRequest(Connection* conn, const proto::binary::RequestView& request);
  void BinaryHello(Connection* conn, const proto::binary::RequestView& request);
  void BinarySubscribe(Connection* conn, const proto::binary::RequestView& request);
  void BinaryUnsubscribe(Connection* conn, const proto::binary::RequestView& request);
  void BinaryTopology(Connection* conn, const proto::binary::RequestView& request);
  void BinaryDispatch(Connection* conn, const proto::binary::RequestView& request,
                      std::span<const std::string_view> args, std::string_view key);
  void BinaryDefer(Connection* conn, PendingReply* slot);
  void BinaryComplete(Connection* conn, PendingReply* slot);
  void BinaryReply(Connection* conn, uint32_t id, uint8_t op, uint8_t flags, std::string_view resp);
  void BinaryClosed(Connection* conn);
  int64_t BinaryPublish(std::string_view channel, std::string_view message);
  void BinaryTick();
  // epoll_wait timeouts in ms: kWaitForEvents blocks until an event (the tick is one).
  static constexpr int kWaitForEvents = -1;
  static int SoonerTimeout(int a, int b) { return a < 0 ? b : b < 0 ? a : std::min(a, b); }
  int BinaryTimeoutMs(int timeout_ms) const;

  Gather* NewGather();
  void Recycle(Gather* gather);

  ShardGroup* group_;
  ShardOptions options_;
  const commands::CommandTable& table_;
  core::Store store_;
  telemetry::ShardMetrics& metrics_;
  uint64_t commands_seen_ = 0;  // picks the commands whose latency is sampled (see Execute)
  core::SlotTable slot_table_;
  core::Clock clock_;
  int64_t now_ms_ = 0;
  int epoll_fd_ = -1;
  // Other shards read wake_fd_ and clear parked_ (Wake): a cache line of their own, so a wake
  // does not take away the line of fields this shard writes for every request.
  alignas(kCacheLine) int wake_fd_ = -1;
  std::atomic<bool> parked_{false};
  // Connections with output waiting behind output another shard writes directly: while nonzero,
  // that shard wakes this one when it hands back such a reply (FlushOutbound).
  std::atomic<uint32_t> direct_waiters_{0};
  alignas(kCacheLine) std::thread thread_;
  bool stopping_ = false;
  int64_t stop_deadline_ms_ = 0;
  bool reported_drained_ = false;

  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::vector<std::unique_ptr<Connection>> zombies_;  // closed, replies still in flight
  std::vector<Connection*> write_list_;
  std::vector<Connection*> resume_list_;
  std::vector<Connection*> resuming_;             // the resume list being run
  std::vector<std::vector<Envelope*>> outbound_;  // per target shard, pushed at the turn's end
  std::vector<Envelope*> open_batches_;           // per target shard: this turn's batch, or null
  std::vector<size_t> unsent_forwards_;           // per target shard: requests not yet in its ring
  std::vector<uint8_t> wake_owed_;                // per target shard: pushed to, and to be woken
  std::unique_ptr<char[]> scratch_;               // one read buffer for every connection
  size_t scratch_used_ = 0;                       // by this turn's reads not yet executed
  // This turn's reads, in scratch_ or (for connections holding earlier input) in their own buffer.
  struct ReadInput {
    Connection* conn;
    std::string_view data;
    bool from_scratch;
  };
  std::vector<ReadInput> read_input_;
  // Each turn's socket reads, then its writes, made together (one io_uring call per batch).
  SocketBatch sockets_;
  struct PendingRead {
    Connection* conn;
    char* target;  // in scratch_ (a window of kScratchReadSize) or in the connection's buffer
  };
  std::vector<PendingRead> pending_reads_;
  struct PendingWrite {
    Connection* conn;
    bool sent;  // a send was queued (else the connection had nothing to send)
  };
  std::vector<PendingWrite> writes_;

  const cluster::View* view_ = nullptr;  // this turn's view (cluster mode)
  uint64_t applied_epoch_ = 0;
  std::string route_error_;  // reused for MOVED texts

  commands::RoutePlan plan_;
  // A batch of parsed pipelined requests (see ProcessInput): their arguments back to back.
  struct ParsedRequest {
    uint32_t first_arg = 0;
    uint32_t arg_count = 0;
    size_t end = 0;  // input offset just past the request
    uint32_t arg1_slot = commands::kNoSlot;
  };
  static constexpr int kRequestBatch = 16;
  std::array<ParsedRequest, kRequestBatch> batch_;
  std::vector<std::string_view> batch_args_;
  // A forwarded batch's requests being run (RunBatch), as they came in its ForwardHeaders.
  struct ForwardedRequest {
    const commands::CommandSpec* spec = nullptr;
    uint64_t caller_id = 0;
    uint32_t key_slot = 0;
    int resp_version = 2;
  };
  std::array<ForwardedRequest, kRequestBatch> forwarded_;
  std::array<std::string_view, kRequestBatch> batch_keys_;  // the keys a batch prefetches
  std::vector<std::string_view> part_args_;
  std::vector<Envelope*> envelope_pool_;
  std::string handover_out_;  // the handed-over connections' output being sent (SendHandovers)
  struct HandoverSend {
    uint32_t handover;
    size_t begin;
    size_t length;
  };
  std::vector<HandoverSend> handover_sends_;
  std::vector<PendingReply*> slot_pool_;
  std::vector<Gather*> gather_pool_;
  int tick_fd_ = -1;       // a periodic timerfd: Timers every kTimerPeriodMs
  bool tick_due_ = false;  // it fired since Timers last ran
  uint64_t random_state_;
  uint64_t background_ticks_;    // kBackgroundWorkUs in CycleClock ticks
  uint64_t wait_blocked_ticks_;  // kWaitBlockedUs in CycleClock ticks
  double us_per_tick_;           // CycleClock ticks to microseconds (turn durations)
  // Decaying sums of the last turns' time blocked in the wait and running (CycleClock ticks).
  uint64_t recent_wait_ticks_ = 0;
  uint64_t recent_run_ticks_ = 0;
  bool coalescing_ = false;  // pause before the next wait (kCoalesceNs)

  commands::ShardStats stats_;
  size_t connection_bytes_ = 0;       // input and output buffers of this shard's connections
  size_t envelope_bytes_ = 0;         // batch buffers of the envelopes this shard sends
  size_t batch_bytes_this_tick_ = 0;  // the largest buffer a batch needed since the last tick
  bool evicting_ = false;             // over the memory cap and eviction is making progress
  bool expiring_ = false;             // the last sweep found many expired keys (1 in 8)
  bool expiry_backlog_ = false;       // ... or most of what it examined (1 in 2)
  bool defragmenting_ = false;        // active defragmentation is under way

  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using SubscriberMap =
      std::unordered_map<std::string, std::vector<Connection*>, NameHash, std::equal_to<>>;
  // This shard's subscribers, by PubSubKind.
  std::array<SubscriberMap, 3> subscribers_;
  BinaryHub binary_hub_;
};

}  // namespace keep::shard
