#include "loader/safetensors_format.h"

#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace inferno {
namespace {

using nlohmann::json;

// A safetensors file with the given header text (unpadded) and data bytes.
std::vector<std::byte> MakeFile(const std::string& header, size_t data_bytes) {
  std::vector<std::byte> file(8 + header.size() + data_bytes, std::byte{0});
  const uint64_t n = header.size();
  std::memcpy(file.data(), &n, 8);
  std::memcpy(file.data() + 8, header.data(), header.size());
  return file;
}

std::string Entry(const std::string& dtype, const std::string& shape, uint64_t begin, uint64_t end) {
  return R"({"dtype": ")" + dtype + R"(", "shape": )" + shape + R"(, "data_offsets": [)" +
         std::to_string(begin) + ", " + std::to_string(end) + "]}";
}

// Parses and expects failure whose message holds every one of `needles`.
void ExpectError(const std::vector<std::byte>& file, const std::vector<std::string>& needles) {
  Result<SafetensorsHeader> header = ParseSafetensorsHeader(file, "m.safetensors");
  ASSERT_FALSE(header) << "parsed a bad file";
  const std::string& message = header.error().message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.rfind("m.safetensors: ", 0), 0u) << message;
  for (const std::string& needle : needles) EXPECT_NE(message.find(needle), std::string::npos) << message;
}

TEST(ParseSafetensorsHeader, ParsesEncodedHeader) {
  const std::vector<TensorInfo> tensors = {
      {"w", DType::kBF16, {3, 2}}, {"n", DType::kF32, {2}}, {"e", DType::kF16, {0}}};
  const std::string encoded = EncodeSafetensorsHeader(tensors, {{"k", "v"}});
  EXPECT_EQ(encoded.size() % 8, 0u);
  std::vector<std::byte> file(encoded.size() + 12 + 8);
  std::memcpy(file.data(), encoded.data(), encoded.size());
  Result<SafetensorsHeader> header = ParseSafetensorsHeader(file, "m.safetensors");
  ASSERT_TRUE(header) << header.error().message;
  EXPECT_EQ(header->data_begin, encoded.size());
  EXPECT_EQ(header->metadata.at("k"), "v");
  ASSERT_EQ(header->tensors.size(), 3u);
  EXPECT_EQ(header->tensors[0].info.name, "w");
  EXPECT_EQ(header->tensors[0].info.dtype, DType::kBF16);
  EXPECT_EQ(header->tensors[0].begin, encoded.size());
  EXPECT_EQ(header->tensors[0].end, encoded.size() + 12);
  EXPECT_EQ(header->tensors[1].info.shape, std::vector<int64_t>{2});
  EXPECT_EQ(header->tensors[2].begin, header->tensors[2].end);
}

TEST(ParseSafetensorsHeader, TruncatedFileShorterThanLengthField) {
  ExpectError(std::vector<std::byte>(5), {"truncated", "5 bytes"});
}

TEST(ParseSafetensorsHeader, HeaderLengthLargerThanFile) {
  std::vector<std::byte> file = MakeFile("{}", 0);
  const uint64_t n = 1000;
  std::memcpy(file.data(), &n, 8);
  ExpectError(file, {"header length 1000", "exceeds the 2 bytes"});
}

TEST(ParseSafetensorsHeader, InvalidJson) { ExpectError(MakeFile("{\"a\": [1, ", 0), {"not valid JSON"}); }

TEST(ParseSafetensorsHeader, HeaderNotAnObject) { ExpectError(MakeFile("[1, 2]", 0), {"not a JSON object"}); }

TEST(ParseSafetensorsHeader, DuplicateTensorNames) {
  ExpectError(
      MakeFile("{\"a\": " + Entry("F32", "[1]", 0, 4) + ", \"a\": " + Entry("F32", "[1]", 4, 8) + "}", 8),
      {"tensor 'a'", "duplicate"});
}

TEST(ParseSafetensorsHeader, NulByteInTensorName) {
  ExpectError(MakeFile("{\"a\\u0000b\": " + Entry("F32", "[1]", 0, 4) + "}", 4), {"'a?b'", "NUL"});
}

TEST(ParseSafetensorsHeader, UnknownDtype) {
  ExpectError(MakeFile("{\"a\": " + Entry("I8", "[4]", 0, 4) + "}", 4), {"tensor 'a'", "unknown dtype 'I8'"});
}

TEST(ParseSafetensorsHeader, OffsetsOutOfBounds) {
  ExpectError(MakeFile("{\"a\": " + Entry("F32", "[4]", 0, 16) + "}", 8),
              {"tensor 'a'", "[0, 16)", "8-byte"});
}

TEST(ParseSafetensorsHeader, OffsetsOverlapping) {
  ExpectError(
      MakeFile("{\"a\": " + Entry("F32", "[2]", 0, 8) + ", \"b\": " + Entry("F32", "[2]", 4, 12) + "}", 12),
      {"tensor 'b'", "overlaps tensor 'a'", "offset 4"});
}

TEST(ParseSafetensorsHeader, OffsetsLeavingAGap) {
  ExpectError(
      MakeFile("{\"a\": " + Entry("F32", "[1]", 0, 4) + ", \"b\": " + Entry("F32", "[1]", 8, 12) + "}", 12),
      {"tensor 'b'", "gap", "offset 8"});
}

TEST(ParseSafetensorsHeader, TrailingBytesAfterLastTensor) {
  ExpectError(MakeFile("{\"a\": " + Entry("F32", "[1]", 0, 4) + "}", 12), {"12 bytes", "trailing"});
}

TEST(ParseSafetensorsHeader, ByteLengthNotMatchingShapeTimesDtype) {
  ExpectError(MakeFile("{\"lm_head.weight\": " + Entry("F32", "[4, 8]", 0, 96) + "}", 96),
              {"tensor 'lm_head.weight'", "96 bytes", "[4, 8] x F32 = 128 bytes"});
}

TEST(ParseSafetensorsHeader, BlockTypesAreSizedByWholeBlocks) {
  Result<SafetensorsHeader> header =
      ParseSafetensorsHeader(MakeFile("{\"q\": " + Entry("Q8_0", "[2, 64]", 0, 136) +
                                          ", \"r\": " + Entry("Q4_0", "[1, 32]", 136, 154) + "}",
                                      154),
                             "m.safetensors");
  ASSERT_TRUE(header.ok()) << header.error().message;
  EXPECT_EQ(header->tensors[0].info.dtype, DType::kQ8_0);
  EXPECT_EQ(TensorByteSize(header->tensors[1].info), 18u);
}

TEST(ParseSafetensorsHeader, BlockTypeRowSplittingABlock) {
  ExpectError(MakeFile("{\"q\": " + Entry("Q8_0", "[3, 48]", 0, 153) + "}", 153),
              {"tensor 'q'", "[3, 48] x Q8_0", "48 elements", "32-element blocks"});
}

TEST(ParseSafetensorsHeader, ShapeSizeOverflowingSixtyFourBits) {
  ExpectError(MakeFile("{\"a\": " + Entry("F32", "[4294967296, 4294967296]", 0, 0) + "}", 0),
              {"tensor 'a'", "overflows"});
  ExpectError(MakeFile("{\"a\": " + Entry("F32", "[4611686018427387904]", 0, 0) + "}", 0),
              {"tensor 'a'", "overflows"});
}

TEST(ParseSafetensorsHeader, NegativeDimension) {
  ExpectError(MakeFile("{\"a\": " + Entry("F32", "[-1]", 0, 0) + "}", 0), {"tensor 'a'", "-1"});
}

TEST(ParseSafetensorsHeader, OffsetsEndingBeforeTheyBegin) {
  ExpectError(MakeFile("{\"a\": " + Entry("F32", "[1]", 8, 4) + "}", 8), {"tensor 'a'", "[8,4]"});
}

TEST(ParseSafetensorsHeader, MetadataValueNotAString) {
  ExpectError(MakeFile(R"({"__metadata__": {"format": 1}})", 0), {"__metadata__ 'format'"});
}

TEST(ParseSafetensorsHeader, MissingShape) {
  ExpectError(MakeFile(R"({"a": {"dtype": "F32", "data_offsets": [0, 4]}})", 4), {"tensor 'a'", "shape"});
}

}  // namespace
}  // namespace inferno
