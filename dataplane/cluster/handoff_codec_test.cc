#include "dataplane/cluster/handoff_codec.h"

#include <gtest/gtest.h>

#include "dataplane/core/byte_io.h"

namespace keep::cluster {
namespace {

constexpr size_t kMax = 1 << 20;

struct Keys {
  HandoffNonce client = RandomNonce();
  HandoffNonce server = RandomNonce();
  HandoffKeys keys;
  Keys() { DeriveSessionKeys("secret", client, server, &keys); }
};

TEST(HandoffCodecTest, SealAndOpenRoundTrip) {
  Keys k;
  std::vector<uint16_t> slots = {0, 1, 16383, 77};
  std::string frame =
      SealMessage(k.keys.client_to_server, HandoffType::kPull, 1, EncodeSlotList(slots));
  EXPECT_EQ(frame.size(), kHandoffLengthBytes + kHandoffMinLength + 4 + 2 * slots.size());
  OpenedMessage message;
  ASSERT_EQ(OpenMessage(k.keys.client_to_server, 1, frame, kMax, &message), OpenStatus::kOk);
  EXPECT_EQ(message.type, HandoffType::kPull);
  EXPECT_EQ(message.sequence, 1u);
  std::vector<uint16_t> parsed;
  ASSERT_TRUE(ParseSlotList(message.body, &parsed));
  EXPECT_EQ(parsed, slots);

  std::string empty = SealMessage(k.keys.server_to_client, HandoffType::kBatch, 9, "");
  ASSERT_EQ(OpenMessage(k.keys.server_to_client, 9, empty, kMax, &message), OpenStatus::kOk);
  EXPECT_TRUE(message.body.empty());
}

TEST(HandoffCodecTest, TruncatedMessagesNeverOpen) {
  Keys k;
  std::string frame = SealMessage(k.keys.client_to_server, HandoffType::kBatch, 0, "records");
  OpenedMessage message;
  for (size_t cut = 0; cut < frame.size(); ++cut) {
    EXPECT_NE(OpenMessage(k.keys.client_to_server, 0, frame.substr(0, cut), kMax, &message),
              OpenStatus::kOk)
        << cut;
  }
  // A length field below the fixed part is refused before anything is read.
  std::string tiny;
  core::PutU32(&tiny, kHandoffMinLength - 1);
  uint32_t length;
  EXPECT_EQ(CheckLength(reinterpret_cast<const uint8_t*>(tiny.data()), kMax, &length),
            OpenStatus::kTooShort);
}

TEST(HandoffCodecTest, OversizedLengthIsRefusedBeforeAllocating) {
  std::string header;
  core::PutU32(&header, 0xFFFFFFFF);
  uint32_t length;
  EXPECT_EQ(CheckLength(reinterpret_cast<const uint8_t*>(header.data()), kMax, &length),
            OpenStatus::kOversized);
  Keys k;
  std::string big =
      SealMessage(k.keys.client_to_server, HandoffType::kBatch, 0, std::string(kMax, 'x'));
  OpenedMessage message;
  EXPECT_EQ(OpenMessage(k.keys.client_to_server, 0, big, kMax, &message), OpenStatus::kOversized);
}

TEST(HandoffCodecTest, ForgedMessagesFailTheMac) {
  Keys k;
  std::string frame =
      SealMessage(k.keys.client_to_server, HandoffType::kSlotsAck, 3, EncodeSlotList({5, 6}));
  OpenedMessage message;
  for (size_t i = kHandoffLengthBytes; i < frame.size(); ++i) {
    std::string forged = frame;
    forged[i] ^= 0x01;
    EXPECT_EQ(OpenMessage(k.keys.client_to_server, 3, forged, kMax, &message), OpenStatus::kBadMac)
        << i;
  }
  // Sealed with another secret, or with the other direction's key (reflection).
  HandoffKeys other;
  DeriveSessionKeys("other-secret", k.client, k.server, &other);
  std::string foreign =
      SealMessage(other.client_to_server, HandoffType::kSlotsAck, 3, EncodeSlotList({5}));
  EXPECT_EQ(OpenMessage(k.keys.client_to_server, 3, foreign, kMax, &message), OpenStatus::kBadMac);
  EXPECT_EQ(OpenMessage(k.keys.server_to_client, 3, frame, kMax, &message), OpenStatus::kBadMac);
  // The hello key opens nothing but HELLO.
  EXPECT_EQ(OpenMessage(DeriveHelloKey("secret"), 3, frame, kMax, &message), OpenStatus::kBadMac);
}

TEST(HandoffCodecTest, ReplayedAndReorderedMessagesFailTheSequence) {
  Keys k;
  std::string first =
      SealMessage(k.keys.client_to_server, HandoffType::kSlotsAck, 1, EncodeSlotList({1}));
  OpenedMessage message;
  EXPECT_EQ(OpenMessage(k.keys.client_to_server, 2, first, kMax, &message),
            OpenStatus::kBadSequence);  // replayed
  EXPECT_EQ(OpenMessage(k.keys.client_to_server, 0, first, kMax, &message),
            OpenStatus::kBadSequence);  // early
  // The same message from another connection (other nonces) does not even authenticate.
  Keys later;
  EXPECT_EQ(OpenMessage(later.keys.client_to_server, 1, first, kMax, &message),
            OpenStatus::kBadMac);
}

TEST(HandoffCodecTest, UnknownTypesAndFlagsAreRefused) {
  Keys k;
  OpenedMessage message;
  for (int type : {0, 10, 255}) {
    std::string frame = SealMessage(k.keys.client_to_server, static_cast<HandoffType>(type), 0, "");
    EXPECT_EQ(OpenMessage(k.keys.client_to_server, 0, frame, kMax, &message), OpenStatus::kBadType);
  }
}

TEST(HandoffCodecTest, DeclinedCarriesAReasonAndASlotList) {
  std::string body = EncodeDeclined(DeclineReason::kNotYet, {3, 16383, 7});
  DeclineReason reason{};
  std::vector<uint16_t> slots;
  ASSERT_TRUE(ParseDeclined(body, &reason, &slots));
  EXPECT_EQ(reason, DeclineReason::kNotYet);
  EXPECT_EQ(slots, (std::vector<uint16_t>{3, 16383, 7}));
  EXPECT_FALSE(ParseDeclined("", &reason, &slots));
  std::string bad_reason = body;
  bad_reason[0] = 3;
  EXPECT_FALSE(ParseDeclined(bad_reason, &reason, &slots));
  EXPECT_FALSE(ParseDeclined(body + "x", &reason, &slots));
  EXPECT_FALSE(ParseDeclined(body.substr(0, body.size() - 1), &reason, &slots));
  EXPECT_FALSE(ParseDeclined(EncodeDeclined(DeclineReason::kNotHeld, {}), &reason, &slots));
}

TEST(HandoffCodecTest, BodyParsersAcceptExactlyTheirLayout) {
  HelloBody hello;
  hello.nonce = RandomNonce();
  std::string encoded = EncodeHello(hello);
  HelloBody parsed;
  ASSERT_TRUE(ParseHello(encoded, &parsed));
  EXPECT_EQ(parsed.nonce, hello.nonce);
  EXPECT_EQ(parsed.version, kHandoffVersion);
  EXPECT_FALSE(ParseHello(encoded + "x", &parsed));
  EXPECT_FALSE(ParseHello(encoded.substr(1), &parsed));

  std::vector<uint16_t> slots;
  EXPECT_FALSE(ParseSlotList(EncodeSlotList({}), &slots));       // empty
  EXPECT_FALSE(ParseSlotList(EncodeSlotList({3, 3}), &slots));   // repeated
  EXPECT_FALSE(ParseSlotList(EncodeSlotList({16384}), &slots));  // out of range
  EXPECT_FALSE(ParseSlotList(EncodeSlotList({1, 2}) + "\x01", &slots));
  EXPECT_FALSE(ParseSlotList(EncodeSlotList({1, 2}).substr(0, 7), &slots));
  std::string lying;
  core::PutU32(&lying, 0xFFFFFFFF);  // a count far beyond the bytes present
  EXPECT_FALSE(ParseSlotList(lying, &slots));

  std::vector<SlotDone> done = {{1, 99, 0}, {16383, 1ull << 60, 5000}};
  std::vector<SlotDone> done_parsed;
  ASSERT_TRUE(ParseSlotsDone(EncodeSlotsDone(done), &done_parsed));
  ASSERT_EQ(done_parsed.size(), 2u);
  EXPECT_EQ(done_parsed[1].fencing_token, 1ull << 60);
  EXPECT_EQ(done_parsed[1].quarantine_remaining_ms, 5000);
  EXPECT_FALSE(ParseSlotsDone(EncodeSlotsDone({{1, 1, -1}}), &done_parsed));
  EXPECT_FALSE(ParseSlotsDone(EncodeSlotsDone({{1, 1, 0}, {1, 2, 0}}), &done_parsed));

  ErrorBody error;
  const std::string error_body = EncodeError(kErrorRefused, "no");  // error.text views it
  ASSERT_TRUE(ParseError(error_body, &error));
  EXPECT_EQ(error.code, kErrorRefused);
  EXPECT_EQ(error.text, "no");
  EXPECT_FALSE(ParseError(EncodeError(kErrorRefused, "no") + "!", &error));
  EXPECT_EQ(EncodeError(1, std::string(5000, 'x')).size(), 4 + kMaxErrorText);
}

}  // namespace
}  // namespace keep::cluster
