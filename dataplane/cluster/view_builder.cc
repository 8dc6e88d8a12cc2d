#include "dataplane/cluster/view_builder.h"

#include <algorithm>
#include <string_view>

namespace keep::cluster {

namespace {

bool SameView(const View& a, const View& b) {
  if (a.fenced != b.fenced || a.self != b.self || a.members.size() != b.members.size()) {
    return false;
  }
  for (size_t i = 0; i < a.members.size(); ++i) {
    const ViewMember& x = a.members[i];
    const ViewMember& y = b.members[i];
    if (x.member.id != y.member.id || !x.member.SameEndpoints(y.member) || x.state != y.state ||
        x.incarnation != y.incarnation) {
      return false;
    }
  }
  return a.owner == b.owner && a.phase == b.phase &&
         a.lock_quarantine_until_ms == b.lock_quarantine_until_ms;
}

}  // namespace

bool ViewBuilder::FinishMove(uint32_t slot, int64_t quarantine_until_ms) {
  if (slot >= core::kSlotCount || move_[slot] == Move::kNone) return false;
  quarantine_[slot] = std::max(quarantine_[slot], quarantine_until_ms);
  if (move_[slot] == Move::kExport) {
    // The new owner holds the data now: the next Build must not start the export again.
    auto it = std::find(previous_ids_.begin(), previous_ids_.end(), move_peer_[slot]);
    previous_owner_[slot] =
        it == previous_ids_.end() ? kNoOwner : static_cast<uint16_t>(it - previous_ids_.begin());
  } else {
    // This member holds the data now: the next Build must not start the import again.
    previous_owner_[slot] = previous_self_;
  }
  move_[slot] = Move::kNone;
  move_peer_[slot].clear();
  --progress_.in_flight;
  ++progress_.done;
  return true;
}

std::unique_ptr<View> ViewBuilder::Build(const Input& input, MoveEvents* events) {
  const MemberList& list = *input.list;
  auto view = std::make_unique<View>();
  view->fenced = input.fenced;
  view->self = input.self;
  view->slot_hash = options_.slot_hash;
  view->built_monotonic_raw_ms = input.monotonic_raw_ms;

  std::vector<std::string_view> ids;
  std::vector<char> candidate_bytes;
  std::vector<bool> alive(list.members.size());
  for (size_t i = 0; i < list.members.size(); ++i) {
    ViewMember vm;
    vm.member = list.members[i];
    FillEndpoints(&vm);
    if (static_cast<int>(i) == input.self) {
      vm.state = input.self_state;
      vm.incarnation = input.self_incarnation;
      alive[i] = true;
    } else {
      const MemberStatus& s = input.status[i];
      vm.state = s.alive ? s.announced : MemberState::kDown;
      vm.incarnation = s.incarnation;
      alive[i] = s.alive;
    }
    view->members.push_back(std::move(vm));
  }
  for (const ViewMember& vm : view->members) ids.push_back(vm.member.id);

  // A fenced member serves nothing and knows nothing new: it keeps the owners, phases and moves
  // of its last view, so a majority lost for a moment (a partition, a stalled scheduler) neither
  // cancels handoffs in flight nor reopens slots empty once it hears the others again.
  auto same_ids = [&](const View& v) {
    return std::equal(ids.begin(), ids.end(), v.members.begin(), v.members.end(),
                      [](std::string_view id, const ViewMember& vm) { return id == vm.member.id; });
  };
  if (input.fenced && last_ != nullptr && same_ids(*last_)) {
    view->owner = last_->owner;
    view->phase = last_->phase;
    view->lock_quarantine_until_ms = last_->lock_quarantine_until_ms;
    for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
      if (view->owner[slot] != kNoOwner) ++view->members[view->owner[slot]].slots_owned;
    }
    if (SameView(*last_, *view)) return nullptr;
    view->epoch = ++epoch_;
    last_ = std::make_unique<View>(*view);
    return view;
  }
  bool candidates[kMaxMembers];
  for (size_t i = 0; i < ids.size(); ++i) {
    MemberState st = view->members[i].state;
    candidates[i] = alive[i] && (st == MemberState::kJoining || st == MemberState::kUp);
  }
  ComputeOwners(options_.placement_seed, ids, std::span<const bool>(candidates, ids.size()),
                &view->owner);

  // A member's first view: slots it gains from members already serving are a join (imported,
  // or quarantined without a handoff), as if the previous view were theirs without this member.
  // With a handoff engine, members still joining count too: a member cannot tell from one
  // heartbeat whether a peer that just announced `joining` already holds keys, and the handoff
  // asks the members that might (an owner with nothing to give declines "not held", and the
  // slot opens empty), so a cluster starting from scratch costs a round of empty pulls, while
  // guessing "nobody serves yet" could leave a peer's keys behind. Without a handoff engine a
  // cluster starting from scratch simply owns every slot.
  if (!have_previous_ && !input.fenced) {
    bool serving[kMaxMembers];
    bool any = false;
    for (size_t i = 0; i < ids.size(); ++i) {
      MemberState st = view->members[i].state;
      serving[i] = static_cast<int>(i) != input.self && alive[i] &&
                   (st == MemberState::kUp || (input.handoff && st == MemberState::kJoining));
      any = any || serving[i];
    }
    if (any) {
      previous_ids_.assign(ids.begin(), ids.end());
      previous_self_ = static_cast<uint16_t>(input.self);
      ComputeOwners(options_.placement_seed, ids, std::span<const bool>(serving, ids.size()),
                    &previous_owner_);
      have_previous_ = true;
    }
  }

  // The previous owner of each slot, by id, mapped onto this list.
  std::vector<int> previous_index(previous_ids_.size(), -1);
  for (size_t p = 0; p < previous_ids_.size(); ++p)
    previous_index[p] = list.IndexOf(previous_ids_[p]);
  auto peer_alive = [&](std::string_view id) {
    int i = list.IndexOf(id);
    return i >= 0 && alive[i] && view->members[i].state != MemberState::kLeft;
  };
  bool may_move = input.handoff && !input.fenced;
  int self = input.self;

  // A member that alone thought this one dead for a while served its slots meanwhile, and now
  // that it hears this member again it exports them back and waits for a pull; this member
  // never saw them leave and would never pull. So: once per such episode, the slots that member
  // gained while this one seemed gone (this member's slots that would be its without this
  // member) are pulled from it, carrying over what it wrote meanwhile.
  std::vector<bool> reclaim_from(ids.size(), false);
  bool reclaiming = false;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (static_cast<int>(i) == self) continue;
    const bool awaits = input.status[i].awaits_my_pull && alive[i];
    auto episode = std::find(reclaimed_from_.begin(), reclaimed_from_.end(), ids[i]);
    if (!awaits) {
      if (episode != reclaimed_from_.end()) reclaimed_from_.erase(episode);
      continue;
    }
    if (!may_move || episode != reclaimed_from_.end()) continue;
    bool importing_from_it = false;
    for (uint32_t slot = 0; slot < core::kSlotCount && !importing_from_it; ++slot) {
      importing_from_it = move_[slot] == Move::kImport && move_peer_[slot] == ids[i];
    }
    if (importing_from_it) continue;  // a normal handoff from it is under way
    reclaim_from[i] = true;
    reclaiming = true;
    reclaimed_from_.emplace_back(ids[i]);
  }
  std::array<uint16_t, core::kSlotCount> owner_without_self;
  if (reclaiming) {
    bool others[kMaxMembers];
    for (size_t i = 0; i < ids.size(); ++i)
      others[i] = candidates[i] && static_cast<int>(i) != self;
    ComputeOwners(options_.placement_seed, ids, std::span<const bool>(others, ids.size()),
                  &owner_without_self);
  }
  auto start_import = [&](uint32_t slot, std::string_view peer) {
    view->phase[slot] = SlotPhase::kImporting;
    move_[slot] = Move::kImport;
    move_peer_[slot] = std::string(peer);
    events->imports.push_back({slot, move_peer_[slot]});
    ++progress_.in_flight;
    ++progress_.total;
  };
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    uint16_t now_owner = view->owner[slot];
    int before = -1;  // the previous owner's index in this list, -1 when none or gone
    bool had_previous = false;
    if (have_previous_ && previous_owner_[slot] != kNoOwner) {
      had_previous = true;
      before = previous_index[previous_owner_[slot]];
    }
    bool mine_now = now_owner != kNoOwner && now_owner == self;
    bool mine_before = have_previous_ && before == self;

    // A move in flight stays as long as it still makes sense.
    if (move_[slot] == Move::kImport) {
      if (mine_now && peer_alive(move_peer_[slot])) {
        view->phase[slot] = SlotPhase::kImporting;
        continue;
      }
      events->cancelled.push_back(slot);
      move_[slot] = Move::kNone;
      --progress_.in_flight;
      // The import was cut short: whatever locks the old owner had did not arrive.
      if (mine_now) quarantine_[slot] = input.now_ms + options_.quarantine_ms;
    } else if (move_[slot] == Move::kExport) {
      if (now_owner != kNoOwner && view->members[now_owner].member.id == move_peer_[slot] &&
          peer_alive(move_peer_[slot])) {
        view->phase[slot] = SlotPhase::kExporting;
        continue;
      }
      events->cancelled.push_back(slot);
      move_[slot] = Move::kNone;
      --progress_.in_flight;
      mine_before = true;
    }

    if (mine_now) {
      if (!had_previous || mine_before) {
        const uint16_t stand_in = reclaiming ? owner_without_self[slot] : kNoOwner;
        if (stand_in != kNoOwner && reclaim_from[stand_in]) {
          start_import(slot, ids[stand_in]);
        } else {
          view->phase[slot] = SlotPhase::kOwned;
        }
      } else if (before >= 0 && before != self && may_move && peer_alive(list.members[before].id)) {
        start_import(slot, list.members[before].id);
      } else {
        // Gained from a dead member (or with no handoff to carry its locks): serve empty,
        // refuse LOCK until any lock the former owner granted has expired (design §3.5).
        view->phase[slot] = SlotPhase::kOwned;
        quarantine_[slot] = input.now_ms + options_.quarantine_ms;
      }
    } else if (mine_before && now_owner != kNoOwner && may_move &&
               peer_alive(view->members[now_owner].member.id)) {
      view->phase[slot] = SlotPhase::kExporting;
      move_[slot] = Move::kExport;
      move_peer_[slot] = view->members[now_owner].member.id;
      events->exports.push_back({slot, move_peer_[slot]});
      ++progress_.in_flight;
      ++progress_.total;
    } else {
      view->phase[slot] = SlotPhase::kNotOwned;
    }
  }
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    int64_t deadline = quarantine_[slot];
    if (view->phase[slot] == SlotPhase::kOwned || view->phase[slot] == SlotPhase::kImporting) {
      deadline = std::max(deadline, boot_quarantine_until_ms_);
    }
    // Expired deadlines are dropped so an idle cluster's views stop changing.
    view->lock_quarantine_until_ms[slot] = deadline > input.now_ms ? deadline : 0;
    if (view->owner[slot] != kNoOwner) ++view->members[view->owner[slot]].slots_owned;
  }

  // The owner recorded for the next build is the member that holds the slot's data: during an
  // export that is still this member, during an import still the member it comes from (if the
  // import is cancelled, this member never held the slot and must not hand it on). A fenced view
  // records nothing: its owners are only what this member could hear, not who holds the data.
  if (!input.fenced) {
    previous_ids_.assign(ids.begin(), ids.end());
    previous_self_ = static_cast<uint16_t>(self);
    for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
      switch (move_[slot]) {
        case Move::kExport:
          previous_owner_[slot] = static_cast<uint16_t>(self);
          break;
        case Move::kImport: {
          int source = list.IndexOf(move_peer_[slot]);
          previous_owner_[slot] = source < 0 ? kNoOwner : static_cast<uint16_t>(source);
          break;
        }
        case Move::kNone:
          previous_owner_[slot] = view->owner[slot];
          break;
      }
    }
    have_previous_ = true;
  }

  if (last_ != nullptr && SameView(*last_, *view)) return nullptr;
  view->epoch = ++epoch_;
  last_ = std::make_unique<View>(*view);
  return view;
}

}  // namespace keep::cluster
