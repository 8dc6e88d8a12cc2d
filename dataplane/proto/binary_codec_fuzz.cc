// libFuzzer target for the binary codec: decodes the input as a stream of requests (and, from the
// same bytes, as a stream of replies) and checks the invariants the shard loop relies on. Every
// complete request is also run through the body parsers and the typed-op mapping. An input whose
// first byte has the high bit set uses its low bits to pick small limits, so the TOO_LARGE and
// skip-limit paths are reachable with short inputs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/proto/binary_codec.h"

namespace {

using namespace keep::proto::binary;

void Check(bool condition) {
  if (!condition) std::abort();
}

bool Inside(std::string_view part, std::string_view whole) {
  if (part.empty()) return true;
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

void ExerciseBodies(const RequestView& r) {
  HelloArgs hello;
  SetArgs set;
  IncrArgs incr;
  LockArgs lock;
  ThrottleArgs throttle;
  FixedWindowArgs window;
  uint64_t ttl = 0;
  uint32_t sub = 0;
  std::vector<std::string_view> args;
  if (ParseHello(r.body, &hello)) Check(Inside(hello.client_name, r.body));
  if (ParseSet(r.body, &set)) Check(Inside(set.value, r.body));
  ParseIncr(r.body, &incr);
  if (ParseLock(r.body, &lock)) Check(Inside(lock.owner, r.body));
  ParseThrottle(r.body, &throttle);
  ParseFixedWindow(r.body, &window);
  ParseTtl(r.body, &ttl);
  ParseUnsubscribe(r.body, &sub);
  if (ParseCommand(r.body, 64, &args)) {
    Check(!args.empty() && args.size() <= 64);
    for (std::string_view a : args) Check(Inside(a, r.body));
  }
  CommandScratch scratch;
  Status status;
  std::string error;
  if (TypedToCommand(r, &scratch, &status, &error)) {
    Check(!scratch.args.empty());
  } else {
    Check(!error.empty());
  }
  // The body as a RESP reply: translation either fails cleanly or yields one decodable frame.
  std::string out;
  if (EncodeTypedReplyFromResp(&out, r.id, r.op, r.flags, r.body)) {
    Decoder d;
    ReplyView reply;
    size_t consumed = 0;
    Check(d.DecodeReply(out, &reply, &consumed) == DecodeStatus::kComplete);
    Check(consumed == out.size());
  } else {
    Check(out.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Limits limits;
  if (size > 0 && (data[0] & 0x80) != 0) {
    limits.max_value_size = (data[0] & 0x0f) * 8;
    limits.max_skip_len = (1u << 20) + limits.max_value_size + ((data[0] >> 4) & 0x07) * 64;
    ++data;
    --size;
  }
  // A heap copy of exactly `size` bytes, so ASan flags any read past the end.
  std::string owned(reinterpret_cast<const char*>(data), size);
  const std::string_view input(owned);

  uint8_t version = 0;
  DecodePreface(input, &version);

  Decoder decoder(limits);
  size_t offset = 0;
  while (offset < input.size()) {
    std::string_view rest = input.substr(offset);
    RequestView r;
    size_t consumed = 12345;
    DecodeStatus s = decoder.DecodeRequest(rest, &r, &consumed);
    if (s == DecodeStatus::kIncomplete) {
      Check(consumed == 0);
      Check(decoder.needed() > rest.size());
      break;
    }
    if (s == DecodeStatus::kError) {
      Check(consumed == 0);
      Check(decoder.error().rfind("ERR Protocol error: ", 0) == 0);
      break;
    }
    if (s == DecodeStatus::kSkip) {
      Check(consumed == 0);
      Check(decoder.skip_bytes() >= kFrameHeaderSize);
      Check(decoder.skip_id() != 0);
      Check(!decoder.skip_text().empty());
      if (decoder.skip_bytes() > rest.size()) break;
      offset += decoder.skip_bytes();
      continue;
    }
    Check(s == DecodeStatus::kComplete);
    Check(consumed >= kFrameHeaderSize && consumed <= rest.size());
    Check(consumed <= limits.max_frame_len() + 4);
    Check(r.id != 0 && IsKnownOp(static_cast<uint8_t>(r.op)));
    Check(Inside(r.key, rest.substr(0, consumed)) && Inside(r.body, rest.substr(0, consumed)));
    Check(r.key.size() + r.body.size() + kFrameHeaderSize == consumed);
    // Re-encoding the decoded view reproduces the frame byte for byte.
    std::string again;
    EncodeRequest(&again, r.id, r.op, r.flags, r.key, r.body);
    Check(again == rest.substr(0, consumed));
    ExerciseBodies(r);
    offset += consumed;
  }

  offset = 0;
  while (offset < input.size()) {
    std::string_view rest = input.substr(offset);
    ReplyView r;
    size_t consumed = 0;
    DecodeStatus s = decoder.DecodeReply(rest, &r, &consumed);
    if (s != DecodeStatus::kComplete) {
      Check(s == DecodeStatus::kIncomplete || s == DecodeStatus::kError);
      break;
    }
    Check(Inside(r.body, rest.substr(0, consumed)));
    int64_t v;
    uint32_t busy;
    Moved moved;
    ServerPreface preface;
    HelloReply hello;
    Event event;
    Topology topology;
    ParseInt(r.body, &v);
    ParseBusy(r.body, &busy);
    if (ParseMoved(r.body, &moved)) Check(Inside(moved.host, r.body));
    ParseServerPreface(r.body, &preface);
    ParseHelloReply(r.body, &hello);
    if (ParseEvent(r, &event)) Check(Inside(event.message, r.body));
    if (ParseTopology(r.body, &topology)) {
      // What parses is consistent, and encodes back to the bytes it came from (trailing bytes
      // aside).
      for (const Endpoint& e : topology.endpoints) {
        Check(Inside(e.host, r.body));
        for (auto [first, last] : e.slot_ranges) Check(first <= last && last < kSlotCount);
      }
      for (const TopologyMember& m : topology.members) {
        Check(Inside(m.id, r.body) && Inside(m.host, r.body));
        Check(m.first_endpoint + m.endpoint_count <= topology.endpoints.size());
      }
      Check(topology.members.empty() || topology.self < topology.members.size());
      std::string again;
      EncodeTopologyReply(&again, r.id, topology);
      Check(r.body.starts_with(std::string_view(again).substr(kFrameHeaderSize)));
    }
    offset += consumed;
  }
  return 0;
}
