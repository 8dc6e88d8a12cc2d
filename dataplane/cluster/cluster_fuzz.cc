// libFuzzer target for the cluster's untrusted-input parsers: heartbeat datagrams (anyone can
// send UDP to the peer port) and member lists (the admin API's PUT body, the members file and
// flag). Checks they never crash and that a datagram which decodes re-encodes to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "dataplane/cluster/heartbeat.h"
#include "dataplane/cluster/member_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keep::cluster;
  constexpr std::string_view kKey = "fuzz-key";
  Heartbeat hb;
  if (DecodeHeartbeat({data, size}, kKey, &hb) == HeartbeatError::kOk) {
    uint8_t again[kMaxHeartbeatBytes];
    size_t length = EncodeHeartbeat(hb, kKey, again);
    if (length != size || std::memcmp(again, data, size) != 0) std::abort();
  }
  // The same bytes signed: reaches the field checks past the MAC.
  if (size >= kHeartbeatHeaderBytes + 1 && size <= kMaxHeartbeatBytes - kHeartbeatMacBytes) {
    Heartbeat forged;
    forged.id.assign(reinterpret_cast<const char*>(data), std::min<size_t>(size, 64));
    forged.incarnation = size;
    uint8_t signed_bytes[kMaxHeartbeatBytes];
    size_t length = EncodeHeartbeat(forged, kKey, signed_bytes);
    if (DecodeHeartbeat({signed_bytes, length}, kKey, &hb) != HeartbeatError::kOk) std::abort();
  }
  std::string_view text(reinterpret_cast<const char*>(data), size);
  MemberList list;
  if (ParseMembersJson(text, &list).empty()) {
    ValidateMembers(list, "a");
    MemberList again;
    if (!ParseMembersJson(MembersToJson(list), &again).empty()) std::abort();
    CheckOneChange(list, again);
  }
  if (ParseInlineMembers(text, &list).empty()) ValidateMembers(list, "");
  return 0;
}
