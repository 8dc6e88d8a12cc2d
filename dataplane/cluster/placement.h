// Rendezvous placement (design §3.3): the owner of a slot is the candidate with the highest
// score XXH3(secret, slot, member id), so when a member joins or leaves only its slots move.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "dataplane/core/slot.h"

namespace keep::cluster {

inline constexpr uint16_t kNoOwner = 0xffff;

// The placement seed, derived from the cluster secret (empty in crc16 mode without a secret).
uint64_t PlacementSeed(std::string_view cluster_secret);

uint64_t PlacementScore(uint64_t seed, uint32_t slot, std::string_view member_id);

// owners[slot] = the index (into `ids`) of the candidate with the highest score; kNoOwner for
// every slot when `candidate` selects nobody. `candidate[i]` says whether ids[i] may own slots.
void ComputeOwners(uint64_t seed, std::span<const std::string_view> ids,
                   std::span<const bool> candidate, std::array<uint16_t, core::kSlotCount>* owners);

}  // namespace keep::cluster
