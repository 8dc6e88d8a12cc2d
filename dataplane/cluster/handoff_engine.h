// The slot handoff engine (design §3.5): moves the keys of whole slots from their old owner to
// the member that gains them, over the TCP peer port, authenticated with the peer secret.
//
// The gaining member pulls: Pull() connects to the old owner, authenticates (handoff_codec.h),
// asks for a set of slots and imports the batches it receives on its own shards; when the owner
// says a shard's slots are complete, it applies their per-slot state (fencing counters) and
// acknowledges them; the owner then drops those keys and answers RELEASED, and only then does
// the gainer own them. The serving side (Serve) is the old owner's half of the same exchange.
//
// Phases and the view logic. The engine never decides who owns what: it calls these hooks on
// the control thread, and the cluster code sets the per-slot phases and answers Busy/MOVED:
//   old owner: on_slot_exporting(slot) when a pull for it is accepted (before any key is read:
//              answer Busy for it from now on), then either on_slot_released(slot) once the
//              gainer has imported it and its keys are dropped here (answer MOVED), or
//              on_export_aborted(slot) when the pull failed before the gainer acknowledged it
//              (the keys are all still here: serve it again, or let a new pull take it).
//   gainer:    on_slot_importing(slot) when Pull() starts (answer Busy), on_slot_owned(slot)
//              once the old owner confirmed the drop (serve it). Pull's on_error lists the slots
//              that did not make it: `failed` ones were never acknowledged (their partial keys
//              are dropped here again; the old owner keeps them), `unconfirmed` ones were
//              acknowledged but the confirmation did not arrive (the keys are here, and the old
//              owner drops its copy if it got the acknowledgement): the view logic decides.
//
// Threads. Everything here runs on the control thread (the io_context given to the engine);
// the store work runs on the owning shards through ShardGroup::SubmitTo, in bounded batches
// (options.batch_budget_bytes per export call, one import per received batch per shard), so a
// handoff never stalls a shard. The io_context must be attached to the group's task channel
// (ShardGroup::tasks().Attach) and must stop running before the group is destroyed.
//
// Ordering with the request path: on_slot_exporting runs before the first export task of the
// slot is submitted, so a phase the hook publishes (through the view's atomic pointer) is visible
// to the shard by the time the task runs (the task ring's release/acquire orders them); a write
// the shard executed before that is in the store when the walk passes, and a later one sees Busy.
//
// Deadlines: connect, every message (a batch in flight, a write), and the whole pull
// (every slot of it). Every phase is logged to stderr (`keep-handoff: ...`) and counted.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/core/slot.h"
#include "dataplane/shard/shard_group.h"

namespace keep::cluster {

struct HandoffOptions {
  std::string peer_secret;
  size_t batch_budget_bytes = 64 * 1024;
  // Bounds every message before it is allocated; must exceed the largest record (key + value +
  // 64 bytes), i.e. the configured value limit.
  size_t max_message_bytes = 64u << 20;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds message_timeout{5000};
  std::chrono::milliseconds pull_timeout{120000};
};

enum class ExportDecision : uint8_t {
  kExport,   // hand the slot over
  kNotHeld,  // this member holds nothing of it (DECLINED not-held)
  kNotYet,   // this member still serves or gains it (DECLINED not-yet)
};

struct HandoffHooks {
  // Old owner. classify_export (optional) decides slot by slot: the slots it does not export
  // are DECLINED with the reason, and the pull goes on for the rest. Without it,
  // authorize_export (optional) accepts or refuses the whole pull.
  std::function<ExportDecision(uint16_t slot)> classify_export;
  std::function<bool(const std::vector<uint16_t>& slots)> authorize_export;
  std::function<void(uint16_t slot)> on_slot_exporting;
  std::function<void(uint16_t slot)> on_slot_released;
  std::function<void(uint16_t slot)> on_export_aborted;
  // Gainer.
  std::function<void(uint16_t slot)> on_slot_importing;
  std::function<void(uint16_t slot)> on_slot_owned;
};

// Control-thread counters (for /metrics and tests).
struct HandoffCounters {
  uint64_t pulls_started = 0;
  uint64_t pulls_completed = 0;
  uint64_t pulls_failed = 0;
  uint64_t exports_started = 0;
  uint64_t exports_completed = 0;
  uint64_t exports_failed = 0;
  uint64_t slots_imported = 0;  // owned after a pull
  uint64_t slots_released = 0;  // dropped after an export
  uint64_t keys_imported = 0;
  uint64_t bytes_imported = 0;  // record bytes
  uint64_t keys_exported = 0;
  uint64_t bytes_exported = 0;
  uint64_t keys_dropped = 0;
  uint64_t rejected_messages = 0;  // forged, replayed, truncated, oversized, malformed
  uint64_t deadlines_expired = 0;
  int64_t last_pull_ms = 0;  // duration of the last completed pull
  // The longest single shard task of each kind: what a handoff adds to one shard turn.
  int64_t longest_export_task_ns = 0;
  int64_t longest_import_task_ns = 0;
  int64_t longest_drop_task_ns = 0;
  // Totals for averages: time spent in export/import tasks and how many ran.
  int64_t export_task_ns = 0;
  uint64_t export_tasks = 0;
  int64_t import_task_ns = 0;
  uint64_t import_tasks = 0;
};

// The slots of a pull the owner DECLINED (none of their keys came).
struct PullDeclined {
  std::vector<uint16_t> not_held;  // the owner holds nothing of them
  std::vector<uint16_t> not_yet;   // the owner still serves or gains them: ask again later
};

struct PullFailure {
  std::string reason;
  std::vector<uint16_t> failed;       // not acknowledged: the old owner keeps them
  std::vector<uint16_t> unconfirmed;  // acknowledged, release not confirmed
  PullDeclined declined;              // declined before the failure
};

class HandoffEngine {
 public:
  HandoffEngine(boost::asio::io_context& io, shard::ShardGroup& group,
                core::SlotFunction slot_function, HandoffOptions options, HandoffHooks hooks);
  ~HandoffEngine();
  HandoffEngine(const HandoffEngine&) = delete;
  HandoffEngine& operator=(const HandoffEngine&) = delete;

  // Serving side: takes a connection accepted on the peer port.
  void Serve(boost::asio::ip::tcp::socket socket);
  // Accepts on `endpoint` and serves every connection (for tests and for a member whose peer
  // acceptor is not shared); returns the bound endpoint (port 0 picks one).
  boost::asio::ip::tcp::endpoint Listen(const boost::asio::ip::tcp::endpoint& endpoint);

  // Gaining side: pulls `slots` from the member at `source`. on_slot_done(slot) follows each
  // on_slot_owned; exactly one of on_complete / on_error ends the pull: on_complete when every
  // slot is owned here or was declined (listed in its argument).
  void Pull(const boost::asio::ip::tcp::endpoint& source, std::vector<uint16_t> slots,
            std::function<void(uint16_t slot)> on_slot_done,
            std::function<void(const PullDeclined&)> on_complete,
            std::function<void(const PullFailure&)> on_error);

  // Closes the listener and every connection (their pulls and exports fail as aborted).
  void Stop();

  const HandoffCounters& counters() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace keep::cluster
