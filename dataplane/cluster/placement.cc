#include "dataplane/cluster/placement.h"

#include <xxhash.h>

#include <cstring>

namespace keep::cluster {

uint64_t PlacementSeed(std::string_view cluster_secret) {
  return XXH3_64bits_withSeed(cluster_secret.data(), cluster_secret.size(), 0x706c616365ull);
}

uint64_t PlacementScore(uint64_t seed, uint32_t slot, std::string_view member_id) {
  char buffer[4 + 256];
  size_t length = std::min(member_id.size(), sizeof(buffer) - 4);
  buffer[0] = static_cast<char>(slot & 0xff);
  buffer[1] = static_cast<char>((slot >> 8) & 0xff);
  buffer[2] = static_cast<char>((slot >> 16) & 0xff);
  buffer[3] = static_cast<char>((slot >> 24) & 0xff);
  std::memcpy(buffer + 4, member_id.data(), length);
  return XXH3_64bits_withSeed(buffer, 4 + length, seed);
}

void ComputeOwners(uint64_t seed, std::span<const std::string_view> ids,
                   std::span<const bool> candidate,
                   std::array<uint16_t, core::kSlotCount>* owners) {
  for (uint32_t slot = 0; slot < core::kSlotCount; ++slot) {
    uint16_t best = kNoOwner;
    uint64_t best_score = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!candidate[i]) continue;
      uint64_t score = PlacementScore(seed, slot, ids[i]);
      // Ties (astronomically rare) go to the smaller id, so every member decides alike.
      if (best == kNoOwner || score > best_score || (score == best_score && ids[i] < ids[best])) {
        best = static_cast<uint16_t>(i);
        best_score = score;
      }
    }
    (*owners)[slot] = best;
  }
}

}  // namespace keep::cluster
