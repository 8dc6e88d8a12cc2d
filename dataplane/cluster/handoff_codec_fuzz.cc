// libFuzzer target for the handoff messages: reads the input as a stream of frames, checks each
// length bound before using it, opens each with a fixed key (so seed frames sealed with it reach
// the type and sequence checks), runs every body parser on every body whatever the MAC said, and
// imports BATCH-shaped bodies into a scratch store (validation first, as the engine does).
// Frames sealed by the seeds use the key HMAC-SHA256("fuzz", "keep-handoff-v1 hello").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/cluster/handoff_codec.h"
#include "dataplane/core/slot_transfer.h"

namespace {

using namespace keep;
using namespace keep::cluster;

constexpr size_t kMaxLength = 1 << 20;

void Check(bool condition) {
  if (!condition) std::abort();
}

void ExerciseBody(std::string_view body) {
  HelloBody hello;
  if (ParseHello(body, &hello)) Check(EncodeHello(hello) == body);
  std::vector<uint16_t> slots;
  if (ParseSlotList(body, &slots)) {
    Check(!slots.empty() && slots.size() <= core::kSlotCount);
    Check(EncodeSlotList(slots) == body);
  }
  DeclineReason reason{};
  if (ParseDeclined(body, &reason, &slots)) Check(EncodeDeclined(reason, slots) == body);
  std::vector<SlotDone> done;
  if (ParseSlotsDone(body, &done)) Check(EncodeSlotsDone(done) == body);
  ErrorBody error;
  if (ParseError(body, &error)) Check(error.text.size() <= kMaxErrorText);

  std::vector<std::string> parts;
  if (core::SplitTransferRecords(body, 3, &parts)) {
    size_t total = 0;
    for (const std::string& part : parts) total += part.size();
    Check(total == body.size());
    static const core::SlotFunction slot_of(core::SlotHash::kCrc16, "");
    static const core::SlotSet all = [] {
      core::SlotSet set;
      for (uint32_t s = 0; s < core::kSlotCount; ++s) set.Add(s);
      return set;
    }();
    core::Store store;
    store.SetNow(1000);
    core::TransferStats stats;
    core::ImportError result = core::ImportRecords(store, slot_of, all, body, 1000, &stats);
    if (result != core::ImportError::kNone) Check(store.Size() == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const HandoffKey key = DeriveHelloKey("fuzz");
  std::string_view input(reinterpret_cast<const char*>(data), size);
  uint64_t sequence = 0;
  while (input.size() >= kHandoffLengthBytes) {
    uint32_t length = 0;
    OpenStatus status =
        CheckLength(reinterpret_cast<const uint8_t*>(input.data()), kMaxLength, &length);
    if (status != OpenStatus::kOk) break;
    if (input.size() - kHandoffLengthBytes < length) {
      OpenedMessage message;
      Check(OpenMessage(key, sequence, input, kMaxLength, &message) != OpenStatus::kOk);
      break;
    }
    const std::string_view frame = input.substr(0, kHandoffLengthBytes + length);
    input.remove_prefix(frame.size());
    OpenedMessage message;
    if (OpenMessage(key, sequence, frame, kMaxLength, &message) == OpenStatus::kOk) {
      ++sequence;
      Check(message.body.size() == length - kHandoffMinLength);
      Check(SealMessage(key, message.type, message.sequence, message.body) == frame);
    }
    ExerciseBody(UnverifiedBody(frame));
  }
  return 0;
}
