#include "dataplane/cluster/cluster_control.h"

#include <time.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

namespace keep::cluster {

namespace asio = boost::asio;
using asio::ip::udp;

namespace {

constexpr int64_t kTickMs = 5;
// A booting member listens this long before it may serve, so it hears whether its peers knew
// a previous life of it (see heartbeat.h, known_incarnation).
constexpr int64_t kListenBeforeServingMs = 2 * kHeartbeatPeriodMs + 10;
// After reaching `left`, keep announcing it for a while so the others learn it before we stop.
constexpr int64_t kLeftAnnounceMs = 150;
constexpr int64_t kResolveRetryMs = 1000;
constexpr int64_t kRejectLogIntervalMs = 1000;

int64_t Millis(int64_t ns) { return ns / 1'000'000; }

MemberState SelfState(int phase) {
  switch (phase) {
    case 0:
      return MemberState::kJoining;
    case 1:
      return MemberState::kUp;
    case 2:
      return MemberState::kLeaving;
    default:
      return MemberState::kLeft;
  }
}

AdminResponse Json(int status, const nlohmann::json& body) {
  return AdminResponse{status, "application/json", body.dump() + "\n"};
}

AdminResponse ErrorJson(int status, std::string_view message) {
  return Json(status, {{"error", message}});
}

void Gauge(std::string* out, const char* name, const char* help, const char* type) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

std::string EscapeLabel(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out.push_back('\\');
    out.push_back(c == '\n' ? ' ' : c);
  }
  return out;
}

}  // namespace

int64_t LockQuarantineMs(int64_t max_lock_ttl_ms) {
  // Detection time, plus a margin for clock rate differences (1%) and scheduling (100 ms).
  return max_lock_ttl_ms + kFailureDetectionMs + max_lock_ttl_ms / 100 + 100;
}

int64_t MonotonicRawNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

ClusterControl::ClusterControl(asio::io_context& io, ClusterOptions options, ViewPublisher* views)
    : io_(io),
      options_(std::move(options)),
      views_(views),
      members_(options_.members),
      builder_(ViewBuilder::Options{PlacementSeed(options_.cluster_secret), options_.slot_hash,
                                    LockQuarantineMs(options_.max_lock_ttl_ms)}),
      socket_(io),
      timer_(io),
      resolver_(io) {
  if (options_.admin_token.empty()) {
    options_.admin_token = HmacSha256Hex(options_.peer_secret, "keep-admin");
  }
  metrics_hook = [this] { return MetricsText(); };
}

ClusterControl::~ClusterControl() = default;

std::string ClusterControl::Start() {
  int self = SelfIndex();
  if (self < 0) return "member id '" + options_.self_id + "' is not in the member list";
  tracker_.SetMembers(members_, self);
  targets_.assign(members_.members.size(), std::nullopt);
  resolving_.assign(members_.members.size(), false);

  // Until the first real view, shards answer CLUSTERDOWN: nothing is known yet.
  auto initial = std::make_unique<View>();
  initial->fenced = true;
  initial->self = self;
  initial->slot_hash = options_.slot_hash;
  initial->owner.fill(kNoOwner);
  initial->phase.fill(SlotPhase::kNotOwned);
  for (size_t i = 0; i < members_.members.size(); ++i) {
    ViewMember vm;
    vm.member = members_.members[i];
    vm.state = static_cast<int>(i) == self ? MemberState::kJoining : MemberState::kDown;
    FillEndpoints(&vm);
    initial->members.push_back(std::move(vm));
  }
  views_->Publish(std::move(initial));

  boost::system::error_code ec;
  auto address = asio::ip::make_address(options_.bind_address, ec);
  if (ec) return "invalid bind address '" + options_.bind_address + "' for the peer port";
  int peer_port = members_.members[self].peer_port;
  socket_.open(address.is_v6() ? udp::v6() : udp::v4(), ec);
  if (!ec) socket_.bind(udp::endpoint(address, static_cast<uint16_t>(peer_port)), ec);
  if (ec) {
    return "cannot bind the peer port " + options_.bind_address + ":" + std::to_string(peer_port) +
           " (udp): " + ec.message();
  }
  socket_.non_blocking(true, ec);
  started_ns_ = MonotonicRawNanos();
  Resolve();
  Receive();
  timer_.expires_after(std::chrono::milliseconds(kTickMs));
  timer_.async_wait([this](const boost::system::error_code& e) {
    if (!e) Tick();
  });
  return "";
}

void ClusterControl::Stop() {
  stopping_ = true;
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    timer_.cancel();
    resolver_.cancel();
    socket_.close(ignored);
  });
}

void ClusterControl::RequestLeave() {
  asio::post(io_, [this] {
    if (phase_ == Lifecycle::kLeaving || phase_ == Lifecycle::kLeft) return;
    fprintf(stderr, "keep-server: cluster: member %s is leaving\n", options_.self_id.c_str());
    phase_ = Lifecycle::kLeaving;
    dirty_ = true;
  });
}

bool ClusterControl::Settled() const {
  return phase_ == Lifecycle::kServing && !views_->current()->fenced &&
         builder_.progress().in_flight == 0;
}

std::string ClusterControl::Phase() const {
  switch (phase_) {
    case Lifecycle::kJoining:
      return "joining";
    case Lifecycle::kServing:
      return "serving";
    case Lifecycle::kLeaving:
      return "leaving";
    case Lifecycle::kLeft:
      return "left";
  }
  return "joining";
}

void ClusterControl::Receive() {
  socket_.async_receive_from(asio::buffer(receive_buffer_), sender_,
                             [this](const boost::system::error_code& ec, size_t size) {
                               if (ec == asio::error::operation_aborted || stopping_) return;
                               if (!ec) OnDatagram(size);
                               Receive();
                             });
}

void ClusterControl::LogRejected(const char* what, uint64_t* counter) {
  ++*counter;
  int64_t now = MonotonicRawNanos();
  if (Millis(now - last_reject_log_ns_) < kRejectLogIntervalMs) {
    ++suppressed_logs_;
    return;
  }
  boost::system::error_code ec;
  std::string from = sender_.address().to_string(ec) + ":" + std::to_string(sender_.port());
  fprintf(stderr,
          "keep-server: cluster: rejected a %s heartbeat from %s (%llu similar lines suppressed)\n",
          what, from.c_str(), static_cast<unsigned long long>(suppressed_logs_));
  suppressed_logs_ = 0;
  last_reject_log_ns_ = now;
}

void ClusterControl::OnDatagram(size_t size) {
  Heartbeat hb;
  switch (DecodeHeartbeat(std::span<const uint8_t>(receive_buffer_.data(), size),
                          options_.peer_secret, &hb)) {
    case HeartbeatError::kMalformed:
      LogRejected("malformed", &rejections_.malformed);
      return;
    case HeartbeatError::kForged:
      LogRejected("forged (bad MAC)", &rejections_.forged);
      return;
    case HeartbeatError::kOk:
      break;
  }
  bool changed = false;
  switch (tracker_.OnHeartbeat(hb, MonotonicRawNanos(), &changed)) {
    case PeerTracker::Verdict::kAccepted:
      break;
    case PeerTracker::Verdict::kReplayed:
      LogRejected("replayed", &rejections_.replayed);
      return;
    case PeerTracker::Verdict::kUnknownMember:
    case PeerTracker::Verdict::kSelf:
      LogRejected("unknown member's", &rejections_.unknown_member);
      return;
  }
  // A member named by DNS (a pod's stable name) may come back at a new address (a new pod):
  // its authenticated heartbeat says where it is now, sooner than a DNS refresh would.
  if (int index = members_.IndexOf(hb.id); index >= 0) {
    const Member& m = members_.members[index];
    boost::system::error_code literal;
    asio::ip::make_address(m.host, literal);
    udp::endpoint now(sender_.address(), static_cast<uint16_t>(m.peer_port));
    if (literal && targets_[index] != now) {
      if (targets_[index]) {
        boost::system::error_code ignored;
        fprintf(stderr, "keep-server: cluster: member %s now at %s\n", m.id.c_str(),
                now.address().to_string(ignored).c_str());
      }
      targets_[index] = now;
    }
  }
  if (hb.known_incarnation != 0 && hb.known_incarnation != options_.incarnation && !reborn_) {
    reborn_ = true;
    dirty_ = true;
  }
  if (changed) dirty_ = true;
}

void ClusterControl::Resolve() {
  last_resolve_ns_ = MonotonicRawNanos();
  int self = SelfIndex();
  std::vector<MemberStatus> status = tracker_.Statuses();
  for (size_t i = 0; i < members_.members.size(); ++i) {
    if (static_cast<int>(i) == self || resolving_[i]) continue;
    const Member& m = members_.members[i];
    boost::system::error_code ec;
    auto address = asio::ip::make_address(m.host, ec);
    if (!ec) {
      targets_[i] = udp::endpoint(address, static_cast<uint16_t>(m.peer_port));
      continue;
    }
    // A DNS name (a pod's stable name) whose address may change when the pod is recreated:
    // resolved while unresolved or not heard, asynchronously, so a slow DNS server never delays
    // heartbeats.
    if (targets_[i] && status[i].alive) continue;
    resolving_[i] = true;
    resolver_.async_resolve(
        udp::v4(), m.host, std::to_string(m.peer_port),
        [this, i, generation = list_generation_](const boost::system::error_code& e,
                                                 udp::resolver::results_type results) {
          if (e == asio::error::operation_aborted || stopping_ || generation != list_generation_) {
            return;
          }
          resolving_[i] = false;
          if (!e && !results.empty()) targets_[i] = results.begin()->endpoint();
        });
  }
}

void ClusterControl::SendHeartbeats(int64_t now_ns) {
  last_send_ns_ = now_ns;
  const View* view = views_->current();
  const HandoffProgress& progress = builder_.progress();
  Heartbeat hb;
  hb.id = options_.self_id;
  hb.incarnation = options_.incarnation;
  hb.view_epoch = view->epoch;
  hb.state = SelfState(static_cast<int>(phase_));
  hb.fenced = fenced_;
  hb.slots_owned = slots_owned_;
  hb.handoff_in_flight = static_cast<uint32_t>(progress.in_flight);
  hb.handoff_done = static_cast<uint32_t>(progress.done);
  hb.handoff_total = static_cast<uint32_t>(progress.total);
  uint8_t datagram[kMaxHeartbeatBytes];
  int self = SelfIndex();
  for (size_t i = 0; i < members_.members.size(); ++i) {
    if (static_cast<int>(i) == self || !targets_[i]) continue;
    hb.sequence = ++sequence_;
    hb.known_incarnation = tracker_.Incarnation(i);
    hb.awaiting_your_pull = i < exporting_to_.size() && exporting_to_[i];
    size_t size = EncodeHeartbeat(hb, options_.peer_secret, datagram);
    boost::system::error_code ignored;
    socket_.send_to(asio::buffer(datagram, size), *targets_[i], 0, ignored);
  }
}

void ClusterControl::Tick() {
  if (stopping_) return;
  int64_t now = MonotonicRawNanos();
  if (tracker_.Expire(now)) dirty_ = true;
  if (tracker_.SettleAwaitingPull(now)) dirty_ = true;
  bool listening = Millis(now - started_ns_) < kListenBeforeServingMs;
  // Listen before talking: until peers hear this life, their heartbeats still name the
  // incarnation they knew, which tells a restarted member that it had a previous life.
  if (!listening && Millis(now - last_send_ns_) >= kHeartbeatPeriodMs) SendHeartbeats(now);
  if (Millis(now - last_resolve_ns_) >= kResolveRetryMs) Resolve();
  size_t voters = members_.members.size() - tracker_.DepartedCount();
  bool fenced = listening || tracker_.HeardCount() < voters / 2 + 1;
  if (fenced != fenced_) {
    fprintf(
        stderr, "keep-server: cluster: %s (hearing %zu of %zu members)\n",
        fenced ? "fenced: no majority heard, keys answer CLUSTERDOWN" : "unfenced: majority heard",
        tracker_.HeardCount(), members_.members.size());
    fenced_ = fenced;
    dirty_ = true;
  }
  if (!listening && dirty_) Rebuild();
  if (phase_ == Lifecycle::kLeft && !left_ && Millis(now - left_at_ns_) >= kLeftAnnounceMs) {
    left_.store(true, std::memory_order_release);
  }
  views_->Reclaim();
  bool settled = Settled();
  if (on_readiness && (settled != reported_settled_ || phase_ != reported_phase_)) {
    reported_settled_ = settled;
    reported_phase_ = phase_;
    on_readiness(Phase(), settled);
  }
  // Wake exactly when the next heartbeat is due or the next silent member turns dead (at most
  // kTickMs later), so detection is not late by a tick.
  int64_t next = std::min(std::max(last_send_ns_ + kHeartbeatPeriodMs * 1'000'000,
                                   started_ns_ + kListenBeforeServingMs * 1'000'000),
                          tracker_.NextDeadlineNs());
  int64_t delay_us = std::clamp<int64_t>((next - MonotonicRawNanos()) / 1000, 100, kTickMs * 1000);
  timer_.expires_after(std::chrono::microseconds(delay_us));
  timer_.async_wait([this](const boost::system::error_code& e) {
    if (!e) Tick();
  });
}

void ClusterControl::Rebuild() {
  dirty_ = false;
  int self = SelfIndex();
  if (self < 0) return;
  if (reborn_ && !reborn_applied_) {
    reborn_applied_ = true;
    int64_t until = core::MonotonicNanos() / 1'000'000 + LockQuarantineMs(options_.max_lock_ttl_ms);
    builder_.QuarantineOwnSlotsUntil(until);
    fprintf(stderr,
            "keep-server: cluster: peers knew a previous life of this member: LOCK is refused in "
            "its slots for %lld ms\n",
            static_cast<long long>(LockQuarantineMs(options_.max_lock_ttl_ms)));
  }
  ViewBuilder::Input input;
  input.list = &members_;
  input.self = self;
  input.self_state = SelfState(static_cast<int>(phase_));
  input.self_incarnation = options_.incarnation;
  input.status = tracker_.Statuses();
  input.fenced = fenced_;
  input.handoff = handoff_ != nullptr;
  input.now_ms = core::MonotonicNanos() / 1'000'000;
  input.monotonic_raw_ms = Millis(MonotonicRawNanos());
  MoveEvents events;
  std::unique_ptr<View> view = builder_.Build(input, &events);
  ApplyMoves(events);
  if (view != nullptr) {
    uint32_t owned = 0;
    size_t up = 0;
    XXH3_state_t* digest = XXH3_createState();
    XXH3_64bits_reset(digest);
    exporting_to_.assign(view->members.size(), false);
    for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
      if (view->phase[slot] == SlotPhase::kOwned) ++owned;
      if (view->phase[slot] == SlotPhase::kExporting && view->owner[slot] != kNoOwner) {
        exporting_to_[view->owner[slot]] = true;
      }
      uint16_t o = view->owner[slot];
      std::string_view id = o == kNoOwner ? std::string_view("-") : view->members[o].member.id;
      XXH3_64bits_update(digest, id.data(), id.size());
      XXH3_64bits_update(digest, "\n", 1);
    }
    char hex[17];
    snprintf(hex, sizeof(hex), "%016llx",
             static_cast<unsigned long long>(XXH3_64bits_digest(digest)));
    XXH3_freeState(digest);
    owners_digest_ = hex;
    for (const ViewMember& vm : view->members) up += vm.state != MemberState::kDown ? 1 : 0;
    slots_owned_ = owned;
    fprintf(stderr,
            "keep-server: cluster: view epoch=%llu members_up=%zu/%zu fenced=%s slots_owned=%u "
            "handoff_in_flight=%llu owners=%s\n",
            static_cast<unsigned long long>(view->epoch), up, view->members.size(),
            view->fenced ? "true" : "false", owned,
            static_cast<unsigned long long>(builder_.progress().in_flight), hex);
    views_->Publish(std::move(view));
  }
  const View* current = views_->current();
  if (phase_ == Lifecycle::kJoining && !fenced_ && builder_.progress().in_flight == 0) {
    phase_ = Lifecycle::kServing;
    dirty_ = true;
  } else if (phase_ == Lifecycle::kLeaving && !fenced_) {
    // Fenced, this member cannot tell whether its slots were handed over: it waits.
    bool holds = false;
    for (uint32_t slot = 0; slot < core::kSlotCount && !holds; ++slot) {
      holds = current->phase[slot] == SlotPhase::kOwned ||
              current->phase[slot] == SlotPhase::kExporting;
    }
    if (!holds) {
      fprintf(stderr, "keep-server: cluster: member %s has left (owns no slots)\n",
              options_.self_id.c_str());
      phase_ = Lifecycle::kLeft;
      left_at_ns_ = MonotonicRawNanos();
      dirty_ = true;
    }
  }
}

void ClusterControl::ApplyMoves(const MoveEvents& events) {
  if (handoff_ == nullptr) return;
  // One line per view change that moves slots, with the count per peer, so a stuck handoff
  // can be traced to the member it waits for.
  if (!events.imports.empty() || !events.exports.empty() || !events.cancelled.empty()) {
    std::map<std::string, std::pair<size_t, size_t>> per_peer;
    for (const SlotMove& move : events.imports) ++per_peer[move.peer].first;
    for (const SlotMove& move : events.exports) ++per_peer[move.peer].second;
    std::string text;
    for (const auto& [peer, counts] : per_peer) {
      text += " " + peer + ":in=" + std::to_string(counts.first) +
              ",out=" + std::to_string(counts.second);
    }
    fprintf(stderr, "keep-server: cluster: moves cancelled=%zu%s\n", events.cancelled.size(),
            text.c_str());
  }
  for (uint32_t slot : events.cancelled) handoff_->Cancel(slot);
  for (const SlotMove& move : events.imports) {
    int i = members_.IndexOf(move.peer);
    if (i >= 0) handoff_->StartImport(move.slot, members_.members[i]);
  }
  for (const SlotMove& move : events.exports) {
    int i = members_.IndexOf(move.peer);
    if (i >= 0) handoff_->StartExport(move.slot, members_.members[i]);
  }
}

bool ClusterControl::FinishMove(uint32_t slot, bool quarantine) {
  int64_t until =
      quarantine ? core::MonotonicNanos() / 1'000'000 + LockQuarantineMs(options_.max_lock_ttl_ms)
                 : 0;
  if (!builder_.FinishMove(slot, until)) return false;
  dirty_ = true;
  return true;
}

bool ClusterControl::Authorized(const AdminRequest& request) {
  constexpr std::string_view kBearer = "Bearer ";
  std::string_view header = request.authorization;
  if (header.size() > kBearer.size() && header.substr(0, kBearer.size()) == kBearer &&
      ConstantTimeEquals(header.substr(kBearer.size()), options_.admin_token)) {
    return true;
  }
  ++rejections_.unauthorized;
  return false;
}

std::string ClusterControl::ClusterJson() const {
  const View* view = views_->current();
  nlohmann::json members = nlohmann::json::array();
  std::vector<uint32_t> counts(view->members.size(), 0);
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    if (view->owner[slot] != kNoOwner) ++counts[view->owner[slot]];
  }
  for (size_t i = 0; i < view->members.size(); ++i) {
    const ViewMember& vm = view->members[i];
    members.push_back({{"id", vm.member.id},
                       {"host", vm.member.host},
                       {"client_port", vm.member.client_port},
                       {"peer_port", vm.member.peer_port},
                       {"shards", vm.member.shards},
                       {"shard_port_base", vm.member.shard_port_base},
                       {"state", MemberStateName(vm.state)},
                       {"incarnation", vm.incarnation},
                       {"slots", counts[i]}});
  }
  uint32_t owned = 0;
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    owned += view->phase[slot] == SlotPhase::kOwned ? 1 : 0;
  }
  const HandoffProgress& progress = builder_.progress();
  nlohmann::json body = {
      {"member_id", options_.self_id},
      {"incarnation", options_.incarnation},
      {"phase", Phase()},
      {"epoch", view->epoch},
      {"fenced", view->fenced},
      {"slot_hash", options_.slot_hash == core::SlotHash::kCrc16 ? "crc16" : "keyed"},
      {"members_version", members_.version},
      {"members", members},
      {"slots_owned", owned},
      {"owners_digest", owners_digest_},
      {"view_built_monotonic_raw_ms", view->built_monotonic_raw_ms},
      {"handoff",
       {{"in_flight", progress.in_flight}, {"done", progress.done}, {"total", progress.total}}},
  };
  return body.dump() + "\n";
}

AdminResponse ClusterControl::PutMembers(const AdminRequest& request) {
  MemberList next;
  std::string error = ParseMembersJson(request.body, &next);
  if (error.empty()) error = ValidateMembers(next, "");
  if (!error.empty()) {
    ++rejections_.bad_request;
    return ErrorJson(400, error);
  }
  if (next.IndexOf(options_.self_id) < 0) {
    ++rejections_.conflict;
    return ErrorJson(409, "the new list does not contain this member ('" + options_.self_id +
                              "'): send it to the members that stay");
  }
  error = CheckOneChange(members_, next);
  if (!error.empty()) {
    ++rejections_.conflict;
    return ErrorJson(409, error);
  }
  MemberChange change = DiffMembers(members_, next);
  if (change.empty() && next.version == members_.version) {
    return Json(200, {{"version", members_.version}, {"changed", false}});
  }
  fprintf(
      stderr, "keep-server: cluster: member list version %llu -> %llu (added %zu, removed %zu)\n",
      static_cast<unsigned long long>(members_.version),
      static_cast<unsigned long long>(next.version), change.added.size(), change.removed.size());
  members_ = std::move(next);
  tracker_.SetMembers(members_, SelfIndex());
  targets_.assign(members_.members.size(), std::nullopt);
  resolving_.assign(members_.members.size(), false);
  ++list_generation_;
  Resolve();
  dirty_ = true;
  Tick();  // publish the view of the new list before answering
  return Json(200, {{"version", members_.version}, {"changed", !change.empty()}});
}

AdminResponse ClusterControl::HandleAdmin(const AdminRequest& request) {
  std::string_view path = request.target;
  if (size_t q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  auto method_not_allowed = [&](const char* allowed) {
    AdminResponse response = ErrorJson(405, std::string("method not allowed; use ") + allowed);
    return response;
  };
  if (path == "/healthz") {
    if (request.method != "GET") return method_not_allowed("GET");
    return Json(200, {{"status", "ok"}});
  }
  if (path == "/readyz") {
    if (request.method != "GET") return method_not_allowed("GET");
    const View* view = views_->current();
    bool ready = Settled();
    return Json(
        ready ? 200 : 503,
        {{"ready", ready}, {"phase", Phase()}, {"fenced", view->fenced}, {"epoch", view->epoch}});
  }
  if (path == "/v1/cluster") {
    if (request.method != "GET") return method_not_allowed("GET");
    return AdminResponse{200, "application/json", ClusterJson()};
  }
  if (path == "/metrics") {
    if (request.method != "GET") return method_not_allowed("GET");
    return AdminResponse{200, "text/plain; version=0.0.4; charset=utf-8", metrics_hook()};
  }
  if (path == "/v1/members") {
    if (request.method == "GET")
      return AdminResponse{200, "application/json", MembersToJson(members_) + "\n"};
    if (request.method != "PUT") return method_not_allowed("GET or PUT");
    if (!Authorized(request))
      return ErrorJson(401, "missing or wrong admin token (Authorization: Bearer ...)");
    return PutMembers(request);
  }
  if (path == "/v1/leave") {
    if (request.method != "POST") return method_not_allowed("POST");
    if (!Authorized(request))
      return ErrorJson(401, "missing or wrong admin token (Authorization: Bearer ...)");
    if (phase_ != Lifecycle::kLeaving && phase_ != Lifecycle::kLeft) {
      fprintf(stderr, "keep-server: cluster: member %s is leaving (admin request)\n",
              options_.self_id.c_str());
      phase_ = Lifecycle::kLeaving;
      dirty_ = true;
    }
    return Json(202, {{"phase", Phase()}});
  }
  return ErrorJson(404, "no such endpoint");
}

std::string ClusterControl::MetricsText() const {
  std::string out;
  const View* view = views_->current();
  Gauge(&out, "keep_cluster_member_up", "Whether this member hears the member (1) or not (0).",
        "gauge");
  for (const ViewMember& vm : view->members) {
    out += "keep_cluster_member_up{member=\"" + EscapeLabel(vm.member.id) + "\"} " +
           (vm.state != MemberState::kDown ? "1" : "0") + "\n";
  }
  Gauge(&out, "keep_cluster_view_epoch", "Epoch of this member's current view.", "gauge");
  out += "keep_cluster_view_epoch " + std::to_string(view->epoch) + "\n";
  Gauge(&out, "keep_cluster_fenced", "1 when this member hears no majority and refuses keys.",
        "gauge");
  out += std::string("keep_cluster_fenced ") + (view->fenced ? "1" : "0") + "\n";
  Gauge(&out, "keep_cluster_slots_owned", "Slots this member serves.", "gauge");
  out += "keep_cluster_slots_owned " + std::to_string(slots_owned_) + "\n";
  Gauge(&out, "keep_cluster_heartbeats_received_total",
        "Authenticated heartbeats accepted, by sender.", "counter");
  int self = SelfIndex();
  for (size_t i = 0; i < members_.members.size(); ++i) {
    if (static_cast<int>(i) == self) continue;
    out += "keep_cluster_heartbeats_received_total{member=\"" +
           EscapeLabel(members_.members[i].id) + "\"} " + std::to_string(tracker_.Received(i)) +
           "\n";
  }
  Gauge(&out, "keep_cluster_heartbeats_lost_total",
        "Heartbeats that never arrived (sequence gaps), by sender.", "counter");
  for (size_t i = 0; i < members_.members.size(); ++i) {
    if (static_cast<int>(i) == self) continue;
    out += "keep_cluster_heartbeats_lost_total{member=\"" + EscapeLabel(members_.members[i].id) +
           "\"} " + std::to_string(tracker_.Lost(i)) + "\n";
  }
  Gauge(&out, "keep_cluster_heartbeats_rejected_total", "Heartbeat datagrams refused, by reason.",
        "counter");
  auto rejected = [&](const char* reason, uint64_t value) {
    out += std::string("keep_cluster_heartbeats_rejected_total{reason=\"") + reason + "\"} " +
           std::to_string(value) + "\n";
  };
  rejected("malformed", rejections_.malformed);
  rejected("forged", rejections_.forged);
  rejected("replayed", rejections_.replayed);
  rejected("unknown_member", rejections_.unknown_member);
  Gauge(&out, "keep_cluster_admin_rejected_total", "Admin calls refused, by reason.", "counter");
  out += "keep_cluster_admin_rejected_total{reason=\"unauthorized\"} " +
         std::to_string(rejections_.unauthorized) + "\n";
  out += "keep_cluster_admin_rejected_total{reason=\"bad_request\"} " +
         std::to_string(rejections_.bad_request) + "\n";
  out += "keep_cluster_admin_rejected_total{reason=\"conflict\"} " +
         std::to_string(rejections_.conflict) + "\n";
  const HandoffProgress& progress = builder_.progress();
  Gauge(&out, "keep_cluster_handoff_slots_in_flight", "Slots being handed over now.", "gauge");
  out += "keep_cluster_handoff_slots_in_flight " + std::to_string(progress.in_flight) + "\n";
  Gauge(&out, "keep_cluster_handoff_slots_done_total", "Slot handoffs completed.", "counter");
  out += "keep_cluster_handoff_slots_done_total " + std::to_string(progress.done) + "\n";
  return out;
}

}  // namespace keep::cluster
