#include "runtime/pipeline_protocol.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

// `header` followed by `floats` payload floats 0, 1, 2, ...
std::vector<std::byte> MessageBytes(const MessageHeader& header, size_t floats) {
  const std::array<std::byte, kMessageHeaderBytes> encoded = EncodeMessageHeader(header);
  std::vector<std::byte> bytes(encoded.begin(), encoded.end());
  for (size_t i = 0; i < floats; ++i) {
    const float value = static_cast<float>(i);
    const auto* begin = reinterpret_cast<const std::byte*>(&value);
    bytes.insert(bytes.end(), begin, begin + sizeof value);
  }
  return bytes;
}

std::vector<std::byte> Raw(std::vector<uint8_t> values) {
  std::vector<std::byte> bytes;
  for (uint8_t value : values) bytes.push_back(static_cast<std::byte>(value));
  return bytes;
}

std::string DecodeError(const std::vector<std::byte>& bytes) {
  Result<PipelineMessage> decoded = DecodePipelineMessage(bytes);
  if (decoded) return "no error";
  EXPECT_EQ(decoded.error().kind, ErrorKind::kCorruption);
  return decoded.error().message;
}

TEST(PipelineProtocol, HeaderIsFourLittleEndianWordsKindSequenceAB) {
  const std::array<std::byte, kMessageHeaderBytes> hidden = EncodeMessageHeader(HiddenMessage{3, 258, 2});
  EXPECT_EQ(std::vector<std::byte>(hidden.begin(), hidden.end()),
            Raw({0, 0, 0, 0, 3, 0, 0, 0, 2, 1, 0, 0, 2, 0, 0, 0}));
  const std::array<std::byte, kMessageHeaderBytes> token = EncodeMessageHeader(TokenMessage{1, 0x1ff, 3});
  EXPECT_EQ(std::vector<std::byte>(token.begin(), token.end()),
            Raw({1, 0, 0, 0, 1, 0, 0, 0, 0xff, 0x01, 0, 0, 3, 0, 0, 0}));
  const std::array<std::byte, kMessageHeaderBytes> classify = EncodeMessageHeader(ClassifyMessage{0, 70000});
  EXPECT_EQ(std::vector<std::byte>(classify.begin(), classify.end()),
            Raw({2, 0, 0, 0, 0, 0, 0, 0, 0x70, 0x11, 0x01, 0, 0, 0, 0, 0}));
}

TEST(PipelineProtocol, DecodeGivesBackEveryKindAndViewsThePayloadInPlace) {
  const std::vector<std::byte> hidden_bytes = MessageBytes(HiddenMessage{2, 7, 3}, 6);
  Result<PipelineMessage> hidden = DecodePipelineMessage(hidden_bytes);
  ASSERT_TRUE(hidden.ok()) << hidden.error().message;
  const auto* h = std::get_if<HiddenMessage>(&hidden->header);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->sequence, 2);
  EXPECT_EQ(h->pos, 7);
  EXPECT_EQ(h->n, 3);
  EXPECT_EQ(hidden->payload_floats(), 6u);
  EXPECT_EQ(hidden->payload.data(), hidden_bytes.data() + kMessageHeaderBytes);
  float last;
  std::memcpy(&last, hidden->payload.data() + 5 * sizeof(float), sizeof last);
  EXPECT_EQ(last, 5.0f);

  Result<PipelineMessage> token = DecodePipelineMessage(MessageBytes(TokenMessage{4, 31, 9}, 0));
  ASSERT_TRUE(token.ok()) << token.error().message;
  ASSERT_TRUE(std::holds_alternative<TokenMessage>(token->header));
  EXPECT_EQ(std::get<TokenMessage>(token->header).token, 31);
  EXPECT_EQ(std::get<TokenMessage>(token->header).pos, 9);
  EXPECT_EQ(SequenceOf(token->header), 4);
  EXPECT_EQ(KindOf(token->header), MessageKind::kToken);
  EXPECT_TRUE(token->payload.empty());

  Result<PipelineMessage> classify = DecodePipelineMessage(MessageBytes(ClassifyMessage{1, 5}, 9));
  ASSERT_TRUE(classify.ok()) << classify.error().message;
  ASSERT_TRUE(std::holds_alternative<ClassifyMessage>(classify->header));
  EXPECT_EQ(std::get<ClassifyMessage>(classify->header).rows, 5);
  EXPECT_EQ(classify->payload_floats(), 9u);

  Result<PipelineMessage> admit = DecodePipelineMessage(MessageBytes(AdmitMessage{6, 3, 32}, 3));
  ASSERT_TRUE(admit.ok()) << admit.error().message;
  ASSERT_TRUE(std::holds_alternative<AdmitMessage>(admit->header));
  EXPECT_EQ(std::get<AdmitMessage>(admit->header).n, 3);
  EXPECT_EQ(std::get<AdmitMessage>(admit->header).first, 32);
  EXPECT_EQ(KindOf(admit->header), MessageKind::kAdmit);

  Result<PipelineMessage> prefix = DecodePipelineMessage(MessageBytes(PrefixMessage{2, 4, 1}, 5));
  ASSERT_TRUE(prefix.ok()) << prefix.error().message;
  ASSERT_TRUE(std::holds_alternative<PrefixMessage>(prefix->header));
  EXPECT_EQ(std::get<PrefixMessage>(prefix->header).restored, 4);
  EXPECT_EQ(std::get<PrefixMessage>(prefix->header).stored, 1);
  EXPECT_EQ(KindOf(prefix->header), MessageKind::kPrefix);
  EXPECT_EQ(SequenceOf(prefix->header), 2);

  Result<PipelineMessage> end =
      DecodePipelineMessage(MessageBytes(ControlMessage{0, ControlMessage::kEnd}, 0));
  ASSERT_TRUE(end.ok()) << end.error().message;
  ASSERT_TRUE(std::holds_alternative<ControlMessage>(end->header));
  EXPECT_EQ(std::get<ControlMessage>(end->header).signal, ControlMessage::kEnd);
}

TEST(PipelineProtocol, ShortMessageIsCorruptionNamingItsLength) {
  EXPECT_EQ(DecodeError({}), "a message of 0 bytes");
  EXPECT_EQ(DecodeError(Raw({0, 0, 0, 0})), "a message of 4 bytes");
  std::vector<std::byte> header_cut = MessageBytes(HiddenMessage{0, 0, 1}, 0);
  header_cut.pop_back();
  EXPECT_EQ(DecodeError(header_cut), "a message of 15 bytes");
}

TEST(PipelineProtocol, PayloadOfPartialFloatIsCorruptionNamingItsLength) {
  std::vector<std::byte> bytes = MessageBytes(HiddenMessage{0, 0, 1}, 2);
  bytes.pop_back();
  EXPECT_EQ(DecodeError(bytes), "a message of 23 bytes");
}

TEST(PipelineProtocol, UnknownKindOrNegativeSequenceIsCorruptionNamingBoth) {
  EXPECT_EQ(DecodeError(Raw({7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})), "kind 7, sequence 0");
  EXPECT_EQ(DecodeError(Raw({0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})),
            "kind -1, sequence 1");
  EXPECT_EQ(DecodeError(MessageBytes(TokenMessage{-2, 5}, 0)), "kind 1, sequence -2");
}

// A group of `members` followed by `floats` payload floats 0, 1, 2, ...
std::vector<std::byte> GroupBytes(const std::vector<MessageHeader>& members, size_t floats) {
  std::vector<std::byte> bytes = EncodeGroupHeader(members);
  for (size_t i = 0; i < floats; ++i) {
    const float value = static_cast<float>(i);
    const auto* begin = reinterpret_cast<const std::byte*>(&value);
    bytes.insert(bytes.end(), begin, begin + sizeof value);
  }
  return bytes;
}

std::string DecodeStepError(const std::vector<std::byte>& bytes) {
  Result<std::vector<PipelineMessage>> decoded = DecodePipelineMessages(bytes);
  if (decoded) return "no error";
  EXPECT_EQ(decoded.error().kind, ErrorKind::kCorruption);
  return decoded.error().message;
}

TEST(PipelineProtocol, GroupIsKindFiveAndCountThenTheMembersHeadersThenTheirPayloads) {
  const std::vector<std::byte> group = GroupBytes({TokenMessage{1, 0x1ff}, TokenMessage{3, 2}}, 0);
  EXPECT_EQ(group, Raw({5, 0, 0, 0, 2, 0, 0, 0, 0,    0,    0, 0, 0, 0, 0, 0,  //
                        1, 0, 0, 0, 1, 0, 0, 0, 0xff, 0x01, 0, 0, 0, 0, 0, 0,  //
                        1, 0, 0, 0, 3, 0, 0, 0, 2,    0,    0, 0, 0, 0, 0, 0}));
}

TEST(PipelineProtocol, DecodeStepGivesAGroupsMembersInOrderEachViewingItsPayload) {
  const std::vector<std::byte> bytes =
      GroupBytes({HiddenMessage{4, 9, 1}, HiddenMessage{0, 2, 1}, HiddenMessage{7, 30, 1}}, 6);
  Result<std::vector<PipelineMessage>> step = DecodePipelineMessages(bytes);
  ASSERT_TRUE(step.ok()) << step.error().message;
  ASSERT_EQ(step->size(), 3u);
  const int32_t sequences[] = {4, 0, 7};
  const int32_t positions[] = {9, 2, 30};
  for (size_t i = 0; i < 3; ++i) {
    const auto* h = std::get_if<HiddenMessage>(&(*step)[i].header);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->sequence, sequences[i]);
    EXPECT_EQ(h->pos, positions[i]);
    EXPECT_EQ(h->n, 1);
    EXPECT_EQ((*step)[i].payload.data(), bytes.data() + 4 * kMessageHeaderBytes + i * 2 * sizeof(float));
    ASSERT_EQ((*step)[i].payload_floats(), 2u);
    float first;
    std::memcpy(&first, (*step)[i].payload.data(), sizeof first);
    EXPECT_EQ(first, static_cast<float>(2 * i));
  }
}

TEST(PipelineProtocol, DecodeStepGivesAMessageThatIsNoGroupAsItself) {
  const std::vector<std::byte> bytes = MessageBytes(ClassifyMessage{3, 4}, 5);
  Result<std::vector<PipelineMessage>> step = DecodePipelineMessages(bytes);
  ASSERT_TRUE(step.ok()) << step.error().message;
  ASSERT_EQ(step->size(), 1u);
  EXPECT_EQ(std::get<ClassifyMessage>((*step)[0].header).rows, 4);
  EXPECT_EQ((*step)[0].payload_floats(), 5u);
  EXPECT_EQ(DecodeStepError(Raw({9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})), "kind 9, sequence 0");
}

TEST(PipelineProtocol, GroupOfNoMembersCutHeadersOrUnequalPayloadsIsCorruptionNamingItsSize) {
  EXPECT_EQ(DecodeStepError(Raw({5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})),
            "a group of 0 messages of 16 bytes");
  std::vector<std::byte> cut = GroupBytes({TokenMessage{0, 1}, TokenMessage{1, 1}}, 0);
  cut.resize(cut.size() - kMessageHeaderBytes);
  EXPECT_EQ(DecodeStepError(cut), "a group of 2 messages of 32 bytes");
  EXPECT_EQ(DecodeStepError(GroupBytes({HiddenMessage{0, 0, 1}, HiddenMessage{1, 0, 1}}, 3)),
            "a group of 2 messages of 60 bytes");
  std::vector<std::byte> partial_float = GroupBytes({HiddenMessage{0, 0, 1}, HiddenMessage{1, 0, 1}}, 2);
  partial_float.resize(partial_float.size() - 2);
  EXPECT_EQ(DecodeStepError(partial_float), "a group of 2 messages of 54 bytes");
}

TEST(PipelineProtocol, GroupOfMixedOrUngroupableKindsIsCorruptionNamingThem) {
  std::vector<std::byte> mixed = GroupBytes({TokenMessage{0, 1}, TokenMessage{1, 1}}, 0);
  mixed[2 * kMessageHeaderBytes] = std::byte{2};  // the second member becomes a classify message
  EXPECT_EQ(DecodeStepError(mixed), "a group of kind 1 and kind 2");
  std::vector<std::byte> admit = GroupBytes({TokenMessage{0, 1}}, 0);
  admit[kMessageHeaderBytes] = std::byte{3};
  EXPECT_EQ(DecodeStepError(admit), "a group holding kind 3");
  std::vector<std::byte> nested = GroupBytes({TokenMessage{0, 1}}, 0);
  nested[kMessageHeaderBytes] = std::byte{5};
  EXPECT_EQ(DecodeStepError(nested), "kind 5, sequence 0");
  EXPECT_EQ(DecodeStepError(GroupBytes({TokenMessage{0, 1}, TokenMessage{-3, 1}}, 0)), "kind 1, sequence -3");
}

TEST(PipelineProtocol, DecodeOfOneMessageRefusesAGroup) {
  EXPECT_EQ(DecodeError(GroupBytes({TokenMessage{0, 1}}, 0)), "kind 5, sequence 1");
}

}  // namespace
}  // namespace inferno
