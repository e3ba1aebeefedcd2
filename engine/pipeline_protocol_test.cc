#include "engine/pipeline_protocol.h"

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
  const std::array<std::byte, kMessageHeaderBytes> token = EncodeMessageHeader(TokenMessage{1, 0x1ff});
  EXPECT_EQ(std::vector<std::byte>(token.begin(), token.end()),
            Raw({1, 0, 0, 0, 1, 0, 0, 0, 0xff, 0x01, 0, 0, 0, 0, 0, 0}));
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

  Result<PipelineMessage> token = DecodePipelineMessage(MessageBytes(TokenMessage{4, 31}, 0));
  ASSERT_TRUE(token.ok()) << token.error().message;
  ASSERT_TRUE(std::holds_alternative<TokenMessage>(token->header));
  EXPECT_EQ(std::get<TokenMessage>(token->header).token, 31);
  EXPECT_EQ(SequenceOf(token->header), 4);
  EXPECT_EQ(KindOf(token->header), MessageKind::kToken);
  EXPECT_TRUE(token->payload.empty());

  Result<PipelineMessage> classify = DecodePipelineMessage(MessageBytes(ClassifyMessage{1, 5}, 9));
  ASSERT_TRUE(classify.ok()) << classify.error().message;
  ASSERT_TRUE(std::holds_alternative<ClassifyMessage>(classify->header));
  EXPECT_EQ(std::get<ClassifyMessage>(classify->header).rows, 5);
  EXPECT_EQ(classify->payload_floats(), 9u);

  Result<PipelineMessage> admit = DecodePipelineMessage(MessageBytes(AdmitMessage{6, 3}, 3));
  ASSERT_TRUE(admit.ok()) << admit.error().message;
  ASSERT_TRUE(std::holds_alternative<AdmitMessage>(admit->header));
  EXPECT_EQ(std::get<AdmitMessage>(admit->header).n, 3);
  EXPECT_EQ(KindOf(admit->header), MessageKind::kAdmit);

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

}  // namespace
}  // namespace inferno
