#include "dataplane/cluster/view.h"

#include <xxhash.h>

#include <charconv>
#include <cstdio>

namespace keep::cluster {

std::string_view MemberStateName(MemberState state) {
  switch (state) {
    case MemberState::kJoining:
      return "joining";
    case MemberState::kUp:
      return "up";
    case MemberState::kLeaving:
      return "leaving";
    case MemberState::kLeft:
      return "left";
    case MemberState::kDown:
      return "down";
  }
  return "down";
}

std::string_view SlotPhaseName(SlotPhase phase) {
  switch (phase) {
    case SlotPhase::kNotOwned:
      return "not_owned";
    case SlotPhase::kOwned:
      return "owned";
    case SlotPhase::kImporting:
      return "importing";
    case SlotPhase::kExporting:
      return "exporting";
  }
  return "not_owned";
}

void FillEndpoints(ViewMember* vm) {
  const Member& m = vm->member;
  vm->endpoints.clear();
  vm->node_ids.clear();
  int count = m.shard_port_base > 0 ? m.shards : 1;
  for (int i = 0; i < count; ++i) {
    int port = m.shard_port_base > 0 ? m.shard_port_base + i : m.client_port;
    vm->endpoints.push_back(m.host + ":" + std::to_string(port));
    std::string name = m.id + "/" + std::to_string(i);
    XXH128_hash_t h = XXH3_128bits(name.data(), name.size());
    uint64_t tail = XXH3_64bits_withSeed(name.data(), name.size(), 40);
    char hex[41];
    snprintf(hex, sizeof(hex), "%016llx%016llx%08llx", static_cast<unsigned long long>(h.high64),
             static_cast<unsigned long long>(h.low64),
             static_cast<unsigned long long>(tail & 0xffffffffull));
    vm->node_ids.emplace_back(hex, 40);
  }
}

void RouteError(const View& view, uint32_t slot, SlotRoute route, std::string* out) {
  out->clear();
  switch (route) {
    case SlotRoute::kServe:
      return;
    case SlotRoute::kFenced:
      out->append(kClusterDownError);
      return;
    case SlotRoute::kTryAgain:
      out->append(kTryAgainError);
      return;
    case SlotRoute::kMoved: {
      char digits[16];
      auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), slot);
      out->append("MOVED ");
      out->append(digits, end);
      out->push_back(' ');
      out->append(view.members[view.owner[slot]].EndpointForSlot(slot));
      return;
    }
  }
}

ViewPublisher::ViewPublisher(int readers)
    : turns_(std::make_unique<Turn[]>(static_cast<size_t>(readers))), readers_(readers) {}

ViewPublisher::~ViewPublisher() {
  delete current_.load();
  for (Retired& r : retired_) delete r.view;
}

void ViewPublisher::Publish(std::unique_ptr<View> view) {
  const View* old = current_.exchange(view.release(), std::memory_order_seq_cst);
  if (old != nullptr) {
    Retired retired{old, std::vector<uint64_t>(static_cast<size_t>(readers_))};
    for (int r = 0; r < readers_; ++r) {
      retired.turns[r] = turns_[r].value.load(std::memory_order_seq_cst);
    }
    retired_.push_back(std::move(retired));
  }
  Reclaim();
}

size_t ViewPublisher::Reclaim() {
  std::erase_if(retired_, [&](const Retired& r) {
    for (int i = 0; i < readers_; ++i) {
      if (turns_[i].value.load(std::memory_order_seq_cst) <= r.turns[i]) return false;
    }
    delete r.view;
    return true;
  });
  return retired_.size();
}

}  // namespace keep::cluster
