#include "dataplane/cluster/handoff_codec.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cstdlib>

#include "dataplane/core/byte_io.h"
#include "dataplane/core/slot.h"

namespace keep::cluster {

namespace {

HandoffKey Hmac(std::string_view key, std::string_view data) {
  HandoffKey out{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &length);
  return out;
}

std::string_view View(const HandoffKey& key) {
  return {reinterpret_cast<const char*>(key.data()), key.size()};
}

std::string Labelled(std::string_view label, const HandoffNonce& client,
                     const HandoffNonce& server) {
  std::string data(label);
  data.append(reinterpret_cast<const char*>(client.data()), client.size());
  data.append(reinterpret_cast<const char*>(server.data()), server.size());
  return data;
}

}  // namespace

const char* HandoffTypeName(HandoffType type) {
  switch (type) {
    case HandoffType::kHello:
      return "HELLO";
    case HandoffType::kHelloAck:
      return "HELLO_ACK";
    case HandoffType::kPull:
      return "PULL";
    case HandoffType::kBatch:
      return "BATCH";
    case HandoffType::kSlotsDone:
      return "SLOTS_DONE";
    case HandoffType::kSlotsAck:
      return "SLOTS_ACK";
    case HandoffType::kReleased:
      return "RELEASED";
    case HandoffType::kError:
      return "ERROR";
    case HandoffType::kDeclined:
      return "DECLINED";
  }
  return "UNKNOWN";
}

const char* OpenStatusName(OpenStatus status) {
  switch (status) {
    case OpenStatus::kOk:
      return "ok";
    case OpenStatus::kTooShort:
      return "truncated";
    case OpenStatus::kOversized:
      return "oversized";
    case OpenStatus::kBadMac:
      return "bad mac";
    case OpenStatus::kBadSequence:
      return "bad sequence";
    case OpenStatus::kBadType:
      return "bad type";
  }
  return "unknown";
}

HandoffKey DeriveHelloKey(std::string_view secret) { return Hmac(secret, "keep-handoff-v1 hello"); }

void DeriveSessionKeys(std::string_view secret, const HandoffNonce& client,
                       const HandoffNonce& server, HandoffKeys* keys) {
  keys->client_to_server = Hmac(secret, Labelled("keep-handoff-v1 c2s", client, server));
  keys->server_to_client = Hmac(secret, Labelled("keep-handoff-v1 s2c", client, server));
}

HandoffNonce RandomNonce() {
  HandoffNonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    std::fprintf(stderr, "keep: RAND_bytes failed\n");
    std::abort();
  }
  return nonce;
}

std::string SealMessage(const HandoffKey& key, HandoffType type, uint64_t sequence,
                        std::string_view body) {
  std::string out;
  out.reserve(kHandoffLengthBytes + kHandoffMinLength + body.size());
  core::PutU32(&out, static_cast<uint32_t>(kHandoffMinLength + body.size()));
  core::PutU8(&out, static_cast<uint8_t>(type));
  core::PutU8(&out, 0);
  core::PutU16(&out, 0);
  core::PutU64(&out, sequence);
  out.append(body);
  HandoffKey mac = Hmac(View(key), out);
  out.append(View(mac));
  return out;
}

OpenStatus CheckLength(const uint8_t* first4, size_t max_length, uint32_t* length) {
  *length = static_cast<uint32_t>(core::LoadLe(reinterpret_cast<const char*>(first4), 4));
  if (*length < kHandoffMinLength) return OpenStatus::kTooShort;
  if (*length > max_length) return OpenStatus::kOversized;
  return OpenStatus::kOk;
}

OpenStatus OpenMessage(const HandoffKey& key, uint64_t expected_sequence, std::string_view frame,
                       size_t max_length, OpenedMessage* out) {
  if (frame.size() < kHandoffLengthBytes) return OpenStatus::kTooShort;
  uint32_t length;
  OpenStatus status =
      CheckLength(reinterpret_cast<const uint8_t*>(frame.data()), max_length, &length);
  if (status != OpenStatus::kOk) return status;
  if (frame.size() != kHandoffLengthBytes + length) return OpenStatus::kTooShort;
  const std::string_view signed_part = frame.substr(0, frame.size() - kHandoffMacBytes);
  const HandoffKey mac = Hmac(View(key), signed_part);
  if (CRYPTO_memcmp(mac.data(), frame.data() + signed_part.size(), kHandoffMacBytes) != 0) {
    return OpenStatus::kBadMac;
  }
  core::ByteReader in(signed_part.substr(kHandoffLengthBytes));
  uint8_t type = 0;
  uint8_t flags = 0;
  uint16_t reserved = 0;
  uint64_t sequence = 0;
  in.GetU8(&type);
  in.GetU8(&flags);
  in.GetU16(&reserved);
  in.GetU64(&sequence);
  if (type < static_cast<uint8_t>(HandoffType::kHello) ||
      type > static_cast<uint8_t>(HandoffType::kDeclined) || flags != 0 || reserved != 0) {
    return OpenStatus::kBadType;
  }
  if (sequence != expected_sequence) return OpenStatus::kBadSequence;
  out->type = static_cast<HandoffType>(type);
  out->sequence = sequence;
  out->body = signed_part.substr(kHandoffLengthBytes + kHandoffHeaderBytes);
  return OpenStatus::kOk;
}

std::string_view UnverifiedBody(std::string_view frame) {
  constexpr size_t kBefore = kHandoffLengthBytes + kHandoffHeaderBytes;
  if (frame.size() < kBefore + kHandoffMacBytes) return {};
  return frame.substr(kBefore, frame.size() - kBefore - kHandoffMacBytes);
}

std::string EncodeHello(const HelloBody& hello) {
  std::string out;
  core::PutU16(&out, hello.version);
  core::PutU16(&out, 0);
  out.append(reinterpret_cast<const char*>(hello.nonce.data()), hello.nonce.size());
  return out;
}

bool ParseHello(std::string_view body, HelloBody* hello) {
  core::ByteReader in(body);
  uint16_t reserved = 0;
  std::string_view nonce;
  if (!in.GetU16(&hello->version) || !in.GetU16(&reserved) ||
      !in.GetBytes(kHandoffNonceBytes, &nonce) || !in.AtEnd() || reserved != 0) {
    return false;
  }
  std::copy(nonce.begin(), nonce.end(), hello->nonce.begin());
  return true;
}

std::string EncodeSlotList(const std::vector<uint16_t>& slots) {
  std::string out;
  core::PutU32(&out, static_cast<uint32_t>(slots.size()));
  for (uint16_t slot : slots) core::PutU16(&out, slot);
  return out;
}

bool ParseSlotList(std::string_view body, std::vector<uint16_t>* slots) {
  core::ByteReader in(body);
  uint32_t count = 0;
  if (!in.GetU32(&count) || count == 0 || count > core::kSlotCount ||
      in.remaining() != size_t{count} * 2) {
    return false;
  }
  std::vector<bool> seen(core::kSlotCount);
  slots->clear();
  slots->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t slot = 0;
    in.GetU16(&slot);
    if (slot >= core::kSlotCount || seen[slot]) return false;
    seen[slot] = true;
    slots->push_back(slot);
  }
  return true;
}

std::string EncodeDeclined(DeclineReason reason, const std::vector<uint16_t>& slots) {
  std::string out;
  core::PutU8(&out, static_cast<uint8_t>(reason));
  return out + EncodeSlotList(slots);
}

bool ParseDeclined(std::string_view body, DeclineReason* reason, std::vector<uint16_t>* slots) {
  if (body.empty()) return false;
  uint8_t code = static_cast<uint8_t>(body[0]);
  if (code != static_cast<uint8_t>(DeclineReason::kNotHeld) &&
      code != static_cast<uint8_t>(DeclineReason::kNotYet)) {
    return false;
  }
  *reason = static_cast<DeclineReason>(code);
  return ParseSlotList(body.substr(1), slots);
}

constexpr size_t kSlotDoneBytes = 2 + 8 + 8;

std::string EncodeSlotsDone(const std::vector<SlotDone>& slots) {
  std::string out;
  core::PutU32(&out, static_cast<uint32_t>(slots.size()));
  for (const SlotDone& done : slots) {
    core::PutU16(&out, done.slot);
    core::PutU64(&out, done.fencing_token);
    core::PutI64(&out, done.quarantine_remaining_ms);
  }
  return out;
}

bool ParseSlotsDone(std::string_view body, std::vector<SlotDone>* slots) {
  core::ByteReader in(body);
  uint32_t count = 0;
  if (!in.GetU32(&count) || count == 0 || count > core::kSlotCount ||
      in.remaining() != size_t{count} * kSlotDoneBytes) {
    return false;
  }
  std::vector<bool> seen(core::kSlotCount);
  slots->clear();
  slots->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    SlotDone done;
    in.GetU16(&done.slot);
    in.GetU64(&done.fencing_token);
    in.GetI64(&done.quarantine_remaining_ms);
    if (done.slot >= core::kSlotCount || seen[done.slot] || done.quarantine_remaining_ms < 0) {
      return false;
    }
    seen[done.slot] = true;
    slots->push_back(done);
  }
  return true;
}

std::string EncodeError(uint16_t code, std::string_view text) {
  if (text.size() > kMaxErrorText) text = text.substr(0, kMaxErrorText);
  std::string out;
  core::PutU16(&out, code);
  core::PutU16(&out, static_cast<uint16_t>(text.size()));
  out.append(text);
  return out;
}

bool ParseError(std::string_view body, ErrorBody* error) {
  core::ByteReader in(body);
  uint16_t length = 0;
  if (!in.GetU16(&error->code) || !in.GetU16(&length) || length > kMaxErrorText ||
      !in.GetBytes(length, &error->text) || !in.AtEnd()) {
    return false;
  }
  return true;
}

}  // namespace keep::cluster
