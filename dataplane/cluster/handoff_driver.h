// Drives the handoff engine from the views (design §3.5): the HandoffHook that ClusterControl
// calls when a Build starts or cancels slot moves, turned into engine pulls and exports.
//
// Gainer: the slots a Build hands it are grouped by the member they are believed to come from
// (the previous owner in this member's views) and pulled in one Pull per source (posted, so every
// slot of one view change goes in the same pull). That belief can be wrong while views differ
// (members booting together, a second change during a handoff), so the old owner answers slot by
// slot: it hands over what its own view marks exporting, declines "not yet" what it still serves
// or gains (asked again after a backoff), and declines "not held" what it does not hold; a slot
// declined "not held" is asked of the next live member, and once every live member has declined
// it "not held", nobody holds it and it opens here empty. A slot the engine reports owned ends its
// move (ClusterControl::FinishMove). A pull that fails is retried with backoff. Slots acknowledged
// but not confirmed (the connection broke between SLOTS_ACK and RELEASED) hold their keys here and
// are taken as owned: the old owner drops its copy when the acknowledgement reached it.
//
// Old owner: the per-slot decision reads this member's current view, so a gainer that runs ahead
// of it is told "not yet" rather than taking keys that are still served here. A released slot
// ends its move; an aborted export leaves the slot exporting, with its keys, for the retry.
//
// Everything runs on the control thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/cluster/cluster_control.h"
#include "dataplane/cluster/handoff_engine.h"
#include "dataplane/cluster/handoff_hook.h"

namespace keep::cluster {

struct HandoffDriverCounters {
  uint64_t pull_attempts = 0;
  uint64_t pull_retries = 0;
  uint64_t pulls_refused_or_failed = 0;
  uint64_t slots_unconfirmed = 0;
  uint64_t slots_declined_not_held = 0;
  uint64_t slots_declined_not_yet = 0;
  uint64_t slots_opened_empty = 0;  // no live member held them
};

class HandoffDriver final : public HandoffHook {
 public:
  // `control` must outlive the driver; the driver must be destroyed (or Stop()ped) before the
  // shard group.
  HandoffDriver(boost::asio::io_context& io, shard::ShardGroup& group,
                core::SlotFunction slot_function, HandoffOptions options, ClusterControl* control);
  ~HandoffDriver() override;

  // Accepts handoff connections on the TCP peer port. Returns an error message or "".
  std::string Listen(const std::string& bind_address, int port);
  void Stop();

  void StartImport(uint32_t slot, const Member& from) override;
  void StartExport(uint32_t slot, const Member& to) override;
  void Cancel(uint32_t slot) override;

  const HandoffCounters& engine_counters() const { return engine_->counters(); }
  const HandoffDriverCounters& counters() const { return counters_; }
  // Prometheus text for the engine's and the driver's counters.
  std::string MetricsText() const;

 private:
  struct Source {
    Member member;
    std::vector<uint16_t> pending;  // wanted from this source, not in a pull yet
    bool pulling = false;
    bool scheduled = false;
    int failures = 0;  // consecutive, for the backoff
    std::unique_ptr<boost::asio::steady_timer> retry;
  };

  void Schedule(Source& source, std::chrono::milliseconds delay);
  void PullFrom(const std::string& id);
  ExportDecision Classify(uint16_t slot) const;
  void OnOwned(uint16_t slot, const std::string& source_id);
  void OnDeclined(const PullDeclined& declined, const std::string& source_id,
                  std::vector<uint16_t>* retry);
  // Asks the next live member not asked yet for `slot`, or opens it empty when none is left.
  void AskNext(uint16_t slot);

  boost::asio::io_context& io_;
  ClusterControl* control_;
  std::unique_ptr<HandoffEngine> engine_;
  // The source each slot is wanted from ("" when no import is wanted), and the members that
  // declined it "not held" since its import started.
  std::vector<std::string> import_from_;
  std::vector<std::vector<std::string>> asked_;
  std::map<std::string, Source> sources_;
  std::vector<uint16_t> waiting_;  // slots waiting for members not heard yet
  std::unique_ptr<boost::asio::steady_timer> recheck_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool stopped_ = false;
  HandoffDriverCounters counters_;
};

}  // namespace keep::cluster
