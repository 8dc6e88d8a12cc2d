#include "dataplane/cluster/handoff_driver.h"

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>

namespace keep::cluster {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr std::chrono::milliseconds kFirstRetry{20};
constexpr std::chrono::milliseconds kMaxRetry{1000};
// How long a gainer waits for listed members it has never heard before it concludes that none
// of them holds a slot (see AskNext).
constexpr std::chrono::milliseconds kUnheardGrace{3000};

void Counter(std::string* out, const char* name, const char* help, uint64_t value,
             const char* type = "counter") {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
  out->append(name).append(" ").append(std::to_string(value)).append("\n");
}

}  // namespace

HandoffDriver::HandoffDriver(asio::io_context& io, shard::ShardGroup& group,
                             core::SlotFunction slot_function, HandoffOptions options,
                             ClusterControl* control)
    : io_(io), control_(control), import_from_(core::kSlotCount), asked_(core::kSlotCount) {
  HandoffHooks hooks;
  hooks.classify_export = [this](uint16_t slot) { return Classify(slot); };
  hooks.on_slot_released = [this](uint16_t slot) { control_->FinishMove(slot); };
  engine_ = std::make_unique<HandoffEngine>(io, group, slot_function, std::move(options),
                                            std::move(hooks));
}

HandoffDriver::~HandoffDriver() { Stop(); }

std::string HandoffDriver::Listen(const std::string& bind_address, int port) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(bind_address, ec);
  if (ec) return "invalid bind address '" + bind_address + "' for the peer port";
  try {
    engine_->Listen(tcp::endpoint(address, static_cast<uint16_t>(port)));
  } catch (const boost::system::system_error& e) {
    return "cannot bind the peer port " + bind_address + ":" + std::to_string(port) +
           " (tcp): " + e.code().message();
  }
  return "";
}

void HandoffDriver::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& [id, source] : sources_) {
    if (source.retry) source.retry->cancel();
  }
  engine_->Stop();
}

ExportDecision HandoffDriver::Classify(uint16_t slot) const {
  const View* view = control_->view();
  if (view == nullptr || view->fenced) return ExportDecision::kNotYet;
  switch (view->phase[slot]) {
    case SlotPhase::kExporting:
      return ExportDecision::kExport;
    case SlotPhase::kNotOwned:
      return ExportDecision::kNotHeld;
    default:
      return ExportDecision::kNotYet;
  }
}

void HandoffDriver::StartImport(uint32_t slot, const Member& from) {
  if (stopped_ || slot >= core::kSlotCount) return;
  import_from_[slot] = from.id;
  asked_[slot].clear();
  Source& source = sources_[from.id];
  source.member = from;
  source.pending.push_back(static_cast<uint16_t>(slot));
  // Posted: every slot of this view change joins the same pull.
  if (!source.pulling) Schedule(source, std::chrono::milliseconds(0));
}

void HandoffDriver::StartExport(uint32_t, const Member&) {
  // The gainer pulls; Authorize admits its pull once the view marks the slot exporting.
}

void HandoffDriver::Cancel(uint32_t slot) {
  if (slot >= core::kSlotCount) return;
  import_from_[slot].clear();
  asked_[slot].clear();
}

void HandoffDriver::OnDeclined(const PullDeclined& declined, const std::string& source_id,
                               std::vector<uint16_t>* retry) {
  for (uint16_t slot : declined.not_yet) {
    ++counters_.slots_declined_not_yet;
    if (import_from_[slot] == source_id) retry->push_back(slot);
  }
  for (uint16_t slot : declined.not_held) {
    ++counters_.slots_declined_not_held;
    if (import_from_[slot] != source_id) continue;
    asked_[slot].push_back(source_id);
    AskNext(slot);
  }
}

void HandoffDriver::AskNext(uint16_t slot) {
  const View* view = control_->view();
  bool unheard = false;  // a listed member never heard since this member booted
  bool dead = false;     // a listed member heard before and silent now
  for (size_t i = 0; view != nullptr && i < view->members.size(); ++i) {
    const ViewMember& vm = view->members[i];
    if (static_cast<int>(i) == view->self) continue;
    const std::vector<std::string>& asked = asked_[slot];
    if (std::find(asked.begin(), asked.end(), vm.member.id) != asked.end()) continue;
    if (vm.state == MemberState::kLeft) continue;
    if (vm.state == MemberState::kDown) {
      (vm.incarnation == 0 ? unheard : dead) = true;
      continue;
    }
    import_from_[slot] = vm.member.id;
    Source& source = sources_[vm.member.id];
    source.member = vm.member;
    source.pending.push_back(slot);
    if (!source.pulling) Schedule(source, std::chrono::milliseconds(0));
    return;
  }
  // A member this one has not heard yet (its address still resolving, its first heartbeats
  // still on the way) may hold the slot: wait for it a while before concluding nobody does.
  auto now = std::chrono::steady_clock::now();
  if (unheard && now - started_ < kUnheardGrace) {
    waiting_.push_back(slot);
    if (!recheck_) recheck_ = std::make_unique<asio::steady_timer>(io_);
    if (waiting_.size() == 1) {
      recheck_->expires_after(std::chrono::milliseconds(50));
      recheck_->async_wait([this](const boost::system::error_code& ec) {
        if (ec || stopped_) return;
        std::vector<uint16_t> slots;
        slots.swap(waiting_);
        for (uint16_t s : slots) {
          if (!import_from_[s].empty()) AskNext(s);
        }
      });
    }
    return;
  }
  // No live member holds it (members booting together, or its holder already handed it here):
  // it opens empty, with the lock quarantine when a member that may have held it died.
  ++counters_.slots_opened_empty;
  if (dead) {  // the common case (members booting together) is counted, not logged per slot
    std::fprintf(stderr,
                 "keep-handoff: slot %u: no live member holds it; it opens empty with the lock "
                 "quarantine (a member that may have held it died)\n",
                 static_cast<unsigned>(slot));
  }
  import_from_[slot].clear();
  asked_[slot].clear();
  control_->FinishMove(slot, dead);
}

void HandoffDriver::Schedule(Source& source, std::chrono::milliseconds delay) {
  if (source.scheduled || stopped_) return;
  source.scheduled = true;
  if (!source.retry) source.retry = std::make_unique<asio::steady_timer>(io_);
  source.retry->expires_after(delay);
  source.retry->async_wait([this, id = source.member.id](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    auto it = sources_.find(id);
    if (it == sources_.end()) return;
    it->second.scheduled = false;
    PullFrom(id);
  });
}

void HandoffDriver::PullFrom(const std::string& id) {
  Source& source = sources_.at(id);
  if (source.pulling) return;
  std::vector<uint16_t> slots;
  for (uint16_t slot : source.pending) {
    if (import_from_[slot] == id) slots.push_back(slot);
  }
  source.pending.clear();
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  if (slots.empty()) return;

  source.pulling = true;
  ++counters_.pull_attempts;
  if (source.failures > 0) ++counters_.pull_retries;
  auto finish = [this, id](const std::vector<uint16_t>& retry) {
    Source& s = sources_.at(id);
    s.pulling = false;
    for (uint16_t slot : retry) s.pending.push_back(slot);
    bool wanted = std::any_of(s.pending.begin(), s.pending.end(),
                              [&](uint16_t slot) { return import_from_[slot] == id; });
    if (!wanted) {
      s.pending.clear();
      return;
    }
    auto delay = std::chrono::milliseconds(0);
    if (!retry.empty()) {
      delay = std::min<std::chrono::milliseconds>(kMaxRetry,
                                                  kFirstRetry * (1 << std::min(s.failures, 6)));
      ++s.failures;
    } else {
      s.failures = 0;
    }
    Schedule(s, delay);
  };
  auto pull = [this, id, slots, finish](const tcp::endpoint& endpoint) {
    engine_->Pull(
        endpoint, slots, [this, id](uint16_t slot) { OnOwned(slot, id); },
        [this, id, finish](const PullDeclined& declined) {
          std::vector<uint16_t> retry;
          OnDeclined(declined, id, &retry);
          finish(retry);
        },
        [this, id, finish](const PullFailure& failure) {
          ++counters_.pulls_refused_or_failed;
          // Keys of unconfirmed slots are here and the old owner dropped (or will drop) its copy.
          for (uint16_t slot : failure.unconfirmed) {
            ++counters_.slots_unconfirmed;
            OnOwned(slot, id);
          }
          std::vector<uint16_t> retry;
          OnDeclined(failure.declined, id, &retry);
          for (uint16_t slot : failure.failed) {
            if (import_from_[slot] == id) retry.push_back(slot);
          }
          finish(retry);
        });
  };

  boost::system::error_code ec;
  auto address = asio::ip::make_address(source.member.host, ec);
  if (!ec) {
    pull(tcp::endpoint(address, static_cast<uint16_t>(source.member.peer_port)));
    return;
  }
  // A DNS name (a pod's stable name): resolved asynchronously so heartbeats never wait on DNS.
  auto resolver = std::make_shared<tcp::resolver>(io_);
  resolver->async_resolve(
      source.member.host, std::to_string(source.member.peer_port),
      [this, resolver, pull, finish, slots, host = source.member.host](
          const boost::system::error_code& error, tcp::resolver::results_type results) {
        if (stopped_) return;
        if (error || results.empty()) {
          std::fprintf(stderr, "keep-handoff: cannot resolve %s: %s\n", host.c_str(),
                       error.message().c_str());
          ++counters_.pulls_refused_or_failed;
          finish(slots);
          return;
        }
        pull(results.begin()->endpoint());
      });
}

void HandoffDriver::OnOwned(uint16_t slot, const std::string& source_id) {
  // A cancelled import's keys stay: the slot is served here anyway (it opened empty).
  if (import_from_[slot] != source_id) return;
  import_from_[slot].clear();
  asked_[slot].clear();
  control_->FinishMove(slot);
}

std::string HandoffDriver::MetricsText() const {
  const HandoffCounters& c = engine_->counters();
  std::string out;
  Counter(&out, "keep_handoff_pulls_started_total", "Pulls this member started as gainer.",
          c.pulls_started);
  Counter(&out, "keep_handoff_pulls_completed_total", "Pulls that completed.", c.pulls_completed);
  Counter(&out, "keep_handoff_pulls_failed_total",
          "Pulls that failed or were refused (retried while the slot is still wanted).",
          c.pulls_failed);
  Counter(&out, "keep_handoff_exports_started_total", "Pulls served by this member as old owner.",
          c.exports_started);
  Counter(&out, "keep_handoff_exports_completed_total", "Exports that completed.",
          c.exports_completed);
  Counter(&out, "keep_handoff_exports_failed_total", "Exports that failed after acceptance.",
          c.exports_failed);
  Counter(&out, "keep_handoff_keys_imported_total", "Keys imported by pulls.", c.keys_imported);
  Counter(&out, "keep_handoff_keys_exported_total", "Keys sent to gainers.", c.keys_exported);
  Counter(&out, "keep_handoff_bytes_imported_total", "Record bytes imported by pulls.",
          c.bytes_imported);
  Counter(&out, "keep_handoff_bytes_exported_total", "Record bytes sent to gainers.",
          c.bytes_exported);
  Counter(&out, "keep_handoff_rejected_messages_total",
          "Handoff messages rejected (forged, replayed, truncated, oversized, malformed).",
          c.rejected_messages);
  Counter(&out, "keep_handoff_deadlines_expired_total", "Handoff deadlines that expired.",
          c.deadlines_expired);
  out.append(
      "# HELP keep_handoff_last_pull_seconds Duration of the last completed pull.\n"
      "# TYPE keep_handoff_last_pull_seconds gauge\n"
      "keep_handoff_last_pull_seconds " +
      std::to_string(static_cast<double>(c.last_pull_ms) / 1000.0) + "\n");
  Counter(&out, "keep_handoff_pull_retries_total",
          "Pulls retried after a refusal or failure (backoff).", counters_.pull_retries);
  Counter(&out, "keep_handoff_slots_declined_not_held_total",
          "Slots an asked member declined because it does not hold them.",
          counters_.slots_declined_not_held);
  Counter(&out, "keep_handoff_slots_declined_not_yet_total",
          "Slots an asked member declined because it still serves or gains them.",
          counters_.slots_declined_not_yet);
  Counter(&out, "keep_handoff_slots_opened_empty_total",
          "Slots gained from a live member that no live member held (opened empty).",
          counters_.slots_opened_empty);
  return out;
}

}  // namespace keep::cluster
