// Messages of the slot handoff protocol (byte-level spec: handoff_protocol.md). Pure functions
// over bytes: no sockets, no engine, so the parser is fuzzed on its own (handoff_codec_fuzz.cc).
//
// Every message is authenticated with HMAC-SHA256. HELLO uses a key derived from the peer secret
// alone; every later message uses a key per direction derived from the secret and both
// connection nonces, and carries a sequence number that must be exactly the next one, so a
// message forged, replayed (from this or another connection), reordered or reflected back to its
// sender fails to open.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keep::cluster {

inline constexpr uint16_t kHandoffVersion = 1;
inline constexpr size_t kHandoffLengthBytes = 4;
// After the length: type, flags, reserved, sequence.
inline constexpr size_t kHandoffHeaderBytes = 1 + 1 + 2 + 8;
inline constexpr size_t kHandoffMacBytes = 32;
inline constexpr size_t kHandoffNonceBytes = 16;
// The smallest value of the length field (an empty body).
inline constexpr size_t kHandoffMinLength = kHandoffHeaderBytes + kHandoffMacBytes;

enum class HandoffType : uint8_t {
  kHello = 1,      // gainer → owner: version, client nonce
  kHelloAck = 2,   // owner → gainer: version, server nonce
  kPull = 3,       // gainer → owner: the slots to move
  kBatch = 4,      // owner → gainer: transfer records (core/slot_transfer.h)
  kSlotsDone = 5,  // owner → gainer: these slots are complete, with their per-slot state
  kSlotsAck = 6,   // gainer → owner: these slots are imported; drop them
  kReleased = 7,   // owner → gainer: these slots are dropped; they are yours
  kError = 8,      // either way: a code and a text; the sender closes
  kDeclined = 9,   // owner → gainer: these slots of the PULL are not handed over (and why)
};
const char* HandoffTypeName(HandoffType type);

using HandoffKey = std::array<uint8_t, 32>;
using HandoffNonce = std::array<uint8_t, kHandoffNonceBytes>;

// The keys of one connection.
struct HandoffKeys {
  HandoffKey hello{};  // HELLO only
  HandoffKey client_to_server{};
  HandoffKey server_to_client{};
};
HandoffKey DeriveHelloKey(std::string_view secret);
// Fills the two direction keys from the secret and both nonces.
void DeriveSessionKeys(std::string_view secret, const HandoffNonce& client,
                       const HandoffNonce& server, HandoffKeys* keys);
HandoffNonce RandomNonce();

// A complete message: length, header, body, MAC.
std::string SealMessage(const HandoffKey& key, HandoffType type, uint64_t sequence,
                        std::string_view body);

enum class OpenStatus : uint8_t {
  kOk = 0,
  kTooShort,     // length field below the minimum, or fewer bytes than it says
  kOversized,    // length field above the limit
  kBadMac,       // forged or corrupted
  kBadSequence,  // replayed or reordered
  kBadType,      // unknown type or nonzero flags/reserved
};
const char* OpenStatusName(OpenStatus status);

// Reads the length field of a message from its first 4 bytes and checks it against
// [kHandoffMinLength, max_length]: call before allocating room for the rest.
OpenStatus CheckLength(const uint8_t* first4, size_t max_length, uint32_t* length);

struct OpenedMessage {
  HandoffType type = HandoffType::kError;
  uint64_t sequence = 0;
  std::string_view body;  // into the frame
};
// `frame` is one whole message, length field included. Checks the MAC before anything else it
// says, then the type and the sequence.
OpenStatus OpenMessage(const HandoffKey& key, uint64_t expected_sequence, std::string_view frame,
                       size_t max_length, OpenedMessage* out);

// The body of a whole frame before it is authenticated: only for HELLO_ACK, whose key is derived
// from the nonce in its own body (OpenMessage must still accept the frame before it is used).
std::string_view UnverifiedBody(std::string_view frame);

// Bodies. Each parser accepts exactly its layout (no trailing bytes) and bounds every count by
// the bytes present before reserving anything.
struct HelloBody {
  uint16_t version = kHandoffVersion;
  HandoffNonce nonce{};
};
std::string EncodeHello(const HelloBody& hello);
bool ParseHello(std::string_view body, HelloBody* hello);

// A list of distinct slots (< 16384): PULL, SLOTS_ACK, RELEASED.
std::string EncodeSlotList(const std::vector<uint16_t>& slots);
bool ParseSlotList(std::string_view body, std::vector<uint16_t>* slots);

// DECLINED: a reason and a slot list. The owner sends it once, before any BATCH, for the slots
// of the PULL it does not hand over; the rest of the pull goes on.
enum class DeclineReason : uint8_t {
  kNotHeld = 1,  // this member does not hold the slot: nothing here to hand over
  kNotYet = 2,   // this member still serves (or is gaining) the slot: ask again later
};
std::string EncodeDeclined(DeclineReason reason, const std::vector<uint16_t>& slots);
bool ParseDeclined(std::string_view body, DeclineReason* reason, std::vector<uint16_t>* slots);

struct SlotDone {
  uint16_t slot = 0;
  uint64_t fencing_token = 0;
  int64_t quarantine_remaining_ms = 0;
};
std::string EncodeSlotsDone(const std::vector<SlotDone>& slots);
bool ParseSlotsDone(std::string_view body, std::vector<SlotDone>* slots);

struct ErrorBody {
  uint16_t code = 0;
  std::string_view text;
};
enum HandoffErrorCode : uint16_t {
  kErrorProtocol = 1,  // a message that does not parse or is out of place
  kErrorRefused = 2,   // the owner will not export these slots
  kErrorImport = 3,    // a batch failed to import
  kErrorDeadline = 4,  // a phase ran out of time
  kErrorShutdown = 5,  // the engine is stopping
};
inline constexpr size_t kMaxErrorText = 1024;
std::string EncodeError(uint16_t code, std::string_view text);
bool ParseError(std::string_view body, ErrorBody* error);

}  // namespace keep::cluster
