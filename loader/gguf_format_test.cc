#include "loader/gguf_format.h"

#include <cstring>

#include <gtest/gtest.h>

#include "base/byte_codec.h"

namespace inferno {
namespace {

GgufValue Scalar(GgufValueType type, GgufValue::Scalar value) { return {type, type, {std::move(value)}}; }

std::vector<GgufKeyValue> SampleMetadata() {
  GgufValue tokens{GgufValueType::kArray, GgufValueType::kString, {std::string("a"), std::string("bc")}};
  GgufValue scores{GgufValueType::kArray, GgufValueType::kFloat32, {0.5, -1.0}};
  return {{"general.architecture", Scalar(GgufValueType::kString, std::string("llama"))},
          {"llama.block_count", Scalar(GgufValueType::kUint32, uint64_t{2})},
          {"llama.attention.layer_norm_rms_epsilon", Scalar(GgufValueType::kFloat32, double{1e-5f})},
          {"some.signed", Scalar(GgufValueType::kInt16, int64_t{-3})},
          {"some.flag", Scalar(GgufValueType::kBool, true)},
          {"some.big", Scalar(GgufValueType::kUint64, uint64_t{1} << 40)},
          {"some.double", Scalar(GgufValueType::kFloat64, 0.25)},
          {"tokenizer.ggml.tokens", tokens},
          {"tokenizer.ggml.scores", scores}};
}

std::vector<GgufTensorInfo> SampleTensors() {
  return {{"token_embd.weight", GgmlType::kF32, {4, 3}},
          {"blk.0.attn_q.weight", GgmlType::kQ8_0, {32, 2}},
          {"blk.0.attn_k.weight", GgmlType::kQ4_0, {64, 1}},
          {"output_norm.weight", GgmlType::kF16, {5}},
          {"output.weight", GgmlType::kBF16, {3, 1}}};
}

// A complete file: header, then each tensor's bytes (filled with `fill`)
// and its padding.
std::string SampleFile(const std::vector<GgufKeyValue>& metadata = SampleMetadata(),
                       const std::vector<GgufTensorInfo>& tensors = SampleTensors(),
                       uint64_t alignment = kGgufDefaultAlignment) {
  std::string file = EncodeGgufHeader(metadata, tensors, alignment);
  for (const GgufTensorInfo& tensor : tensors) {
    const uint64_t bytes = GgufTensorBytes(tensor);
    file += std::string(bytes, '\x11');
    file += std::string(GgufPadded(bytes, alignment) - bytes, '\0');
  }
  return file;
}

Result<GgufFile> Parse(const std::string& file) {
  return ParseGgufFile(std::as_bytes(std::span(file.data(), file.size())), "m.gguf");
}

void ExpectError(const std::string& file, const std::string& needle) {
  Result<GgufFile> parsed = Parse(file);
  ASSERT_FALSE(parsed) << needle;
  EXPECT_NE(parsed.error().message.find("m.gguf: byte "), std::string::npos) << parsed.error().message;
  EXPECT_NE(parsed.error().message.find(needle), std::string::npos) << parsed.error().message;
  EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos);
}

// Byte offset of the first occurrence of `text` in `file`.
size_t OffsetOf(const std::string& file, const std::string& text) {
  const size_t at = file.find(text);
  CHECK_NE(at, std::string::npos) << text;
  return at;
}

void Put64(std::string& file, size_t at, uint64_t value) {
  StoreLittleEndian(std::as_writable_bytes(std::span(file)).subspan(at), value);
}
void Put32(std::string& file, size_t at, uint32_t value) {
  StoreLittleEndian(std::as_writable_bytes(std::span(file)).subspan(at), value);
}

// The byte offset of tensor `name`'s n_dims field.
size_t DimsOffset(const std::string& file, const std::string& name) {
  return OffsetOf(file, name) + name.size();
}

TEST(GgufFormat, RoundTripsEveryValueTypeAndTensorType) {
  const std::string file = SampleFile();
  Result<GgufFile> parsed = Parse(file);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->version, kGgufVersion);
  ASSERT_EQ(parsed->metadata.size(), SampleMetadata().size());
  for (size_t i = 0; i < parsed->metadata.size(); ++i) {
    EXPECT_EQ(parsed->metadata[i].key, SampleMetadata()[i].key);
    EXPECT_EQ(parsed->metadata[i].value, SampleMetadata()[i].value) << parsed->metadata[i].key;
  }
  EXPECT_EQ(*parsed->Find("general.architecture")->AsString(), "llama");
  EXPECT_EQ(parsed->Find("llama.block_count")->AsInt(), 2);
  EXPECT_EQ(parsed->Find("some.signed")->AsInt(), -3);
  EXPECT_FLOAT_EQ(static_cast<float>(*parsed->Find("llama.attention.layer_norm_rms_epsilon")->AsFloat()),
                  1e-5f);
  EXPECT_EQ(parsed->Find("tokenizer.ggml.tokens")->TypeName(), "array of string");
  EXPECT_EQ(parsed->Find("missing"), nullptr);
  ASSERT_EQ(parsed->tensors.size(), SampleTensors().size());
  EXPECT_EQ(parsed->data_begin % kGgufDefaultAlignment, 0u);
  uint64_t at = parsed->data_begin;
  for (size_t i = 0; i < parsed->tensors.size(); ++i) {
    const GgufTensor& tensor = parsed->tensors[i];
    EXPECT_EQ(tensor.info.name, SampleTensors()[i].name);
    EXPECT_EQ(tensor.info.type, SampleTensors()[i].type);
    EXPECT_EQ(tensor.info.ne, SampleTensors()[i].ne);
    EXPECT_EQ(tensor.begin, at);
    at = GgufPadded(tensor.end, kGgufDefaultAlignment);
  }
  EXPECT_EQ(at, file.size());
  // Block sizes: Q8_0 2 rows of one 34-byte block, Q4_0 one row of two 18-byte blocks.
  EXPECT_EQ(parsed->tensors[1].end - parsed->tensors[1].begin, 68u);
  EXPECT_EQ(parsed->tensors[2].end - parsed->tensors[2].begin, 36u);
}

TEST(GgufFormat, HonoursGeneralAlignment) {
  std::vector<GgufKeyValue> metadata = SampleMetadata();
  metadata.push_back({kGgufAlignmentKey, Scalar(GgufValueType::kUint32, uint64_t{64})});
  Result<GgufFile> parsed = Parse(SampleFile(metadata, SampleTensors(), 64));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->alignment, 64u);
  for (const GgufTensor& tensor : parsed->tensors) EXPECT_EQ((tensor.begin - parsed->data_begin) % 64, 0u);
}

TEST(GgufFormat, FailsOnBadMagic) {
  std::string file = SampleFile();
  file[0] = 'X';
  ExpectError(file, "byte 0: bad magic number");
}

TEST(GgufFormat, FailsOnUnsupportedVersion) {
  std::string file = SampleFile();
  Put32(file, 4, 1);
  ExpectError(file, "byte 4: GGUF version 1 is not supported");
}

TEST(GgufFormat, FailsOnTruncatedHeader) { ExpectError(SampleFile().substr(0, 10), "truncated"); }

TEST(GgufFormat, FailsOnHugeCounts) {
  std::string file = SampleFile();
  Put64(file, 16, uint64_t{1} << 60);
  ExpectError(file, "byte 16: metadata count 1152921504606846976 exceeds");
  file = SampleFile();
  Put64(file, 8, uint64_t{1} << 60);
  ExpectError(file, "byte 8: tensor count");
}

TEST(GgufFormat, FailsOnStringLongerThanTheFile) {
  std::string file = SampleFile();
  const size_t at = OffsetOf(file, "general.architecture") - 8;
  Put64(file, at, uint64_t{1} << 62);
  ExpectError(file, "byte " + std::to_string(at) + ": metadata key of 4611686018427387904 bytes exceeds");
}

TEST(GgufFormat, FailsOnArrayLongerThanTheFile) {
  std::string file = SampleFile();
  // tokens array: key, uint32 kArray, uint32 kString, uint64 count.
  const size_t at = OffsetOf(file, "tokenizer.ggml.tokens") + 21 + 8;
  Put64(file, at, uint64_t{1} << 50);
  ExpectError(file, "byte " + std::to_string(at) + ": array of 1125899906842624 elements exceeds");
}

TEST(GgufFormat, FailsOnUnknownValueType) {
  std::string file = SampleFile();
  Put32(file, OffsetOf(file, "llama.block_count") + 17, 13);
  ExpectError(file, "unknown value type 13 (in the value of 'llama.block_count')");
}

TEST(GgufFormat, FailsOnNestedArray) {
  std::string file = SampleFile();
  Put32(file, OffsetOf(file, "tokenizer.ggml.tokens") + 21 + 4, 9);
  ExpectError(file, "nested arrays are not supported");
}

TEST(GgufFormat, FailsOnBoolOtherThanZeroOrOne) {
  std::string file = SampleFile();
  file[OffsetOf(file, "some.flag") + 9 + 4] = 2;
  ExpectError(file, "bool value 2 is neither 0 nor 1");
}

TEST(GgufFormat, FailsOnDuplicateKey) {
  std::vector<GgufKeyValue> metadata = SampleMetadata();
  metadata.push_back(metadata[1]);
  ExpectError(SampleFile(metadata), "duplicate metadata key 'llama.block_count'");
}

TEST(GgufFormat, FailsOnAlignmentNotAPowerOfTwo) {
  std::vector<GgufKeyValue> metadata = SampleMetadata();
  metadata.push_back({kGgufAlignmentKey, Scalar(GgufValueType::kUint32, uint64_t{48})});
  ExpectError(SampleFile(metadata), "general.alignment must be a uint32 power of two");
  metadata.back().value = Scalar(GgufValueType::kUint64, uint64_t{32});
  ExpectError(SampleFile(metadata), "general.alignment must be a uint32 power of two");
}

TEST(GgufFormat, FailsOnDuplicateTensorName) {
  std::vector<GgufTensorInfo> tensors = SampleTensors();
  tensors[3].name = tensors[0].name;
  ExpectError(SampleFile(SampleMetadata(), tensors), "tensor 'token_embd.weight': duplicate tensor name");
}

TEST(GgufFormat, FailsOnTensorNameLongerThanGgmls) {
  std::vector<GgufTensorInfo> tensors = SampleTensors();
  tensors[0].name = std::string(64, 'x');
  ExpectError(SampleFile(SampleMetadata(), tensors), "name of 64 bytes exceeds ggml's 63");
}

TEST(GgufFormat, FailsOnTooManyDimensions) {
  std::string file = SampleFile();
  const size_t at = DimsOffset(file, "output_norm.weight");
  Put32(file, at, 5);
  ExpectError(file, "byte " + std::to_string(at) + ": tensor 'output_norm.weight': 5 dimensions");
}

TEST(GgufFormat, FailsOnElementCountOverflow) {
  std::string file = SampleFile();
  const size_t at = DimsOffset(file, "token_embd.weight");
  Put64(file, at + 4, uint64_t{1} << 40);
  Put64(file, at + 12, uint64_t{1} << 40);
  ExpectError(file, "tensor 'token_embd.weight': element count overflows int64");
}

TEST(GgufFormat, FailsOnRowNotAMultipleOfTheBlock) {
  std::vector<GgufTensorInfo> tensors = SampleTensors();
  std::string file = SampleFile(SampleMetadata(), tensors);
  Put64(file, DimsOffset(file, "blk.0.attn_q.weight") + 4, 48);
  ExpectError(file, "row length ne[0] = 48 is not a multiple of Q8_0's block of 32");
}

TEST(GgufFormat, FailsNamingAnUnsupportedType) {
  std::string file = SampleFile();
  // n_dims, two dims, then the type.
  Put32(file, DimsOffset(file, "blk.0.attn_k.weight") + 4 + 16, 16);  // IQ2_XXS
  Result<GgufFile> parsed = Parse(file);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().kind, ErrorKind::kUnimplemented);
  EXPECT_NE(parsed.error().message.find("tensor 'blk.0.attn_k.weight' has ggml type IQ2_XXS"),
            std::string::npos)
      << parsed.error().message;
}

TEST(GgufFormat, FailsOnMisalignedOffset) {
  std::string file = SampleFile();
  // token_embd: n_dims, two dims, type, then its offset (0).
  Put64(file, DimsOffset(file, "token_embd.weight") + 4 + 16 + 4, 4);
  ExpectError(file, "data offset 4 is not a multiple of the alignment 32");
}

TEST(GgufFormat, FailsOnOverlapAndGap) {
  std::string file = SampleFile();
  const size_t offset_at = DimsOffset(file, "blk.0.attn_q.weight") + 4 + 16 + 4;
  Put64(file, offset_at, 0);
  ExpectError(file, "tensor 'blk.0.attn_q.weight': data offset 0 overlaps");
  Put64(file, offset_at, 96);
  ExpectError(file, "tensor 'blk.0.attn_q.weight': data offset 96 leaves a gap");
}

TEST(GgufFormat, FailsOnTensorPastTheEndOfTheFile) {
  const std::string file = SampleFile();
  ExpectError(file.substr(0, file.size() - 40), "tensor 'output.weight': data [");
}

TEST(GgufFormat, FailsOnTrailingBytes) {
  ExpectError(SampleFile() + std::string(32, '\0'), "trailing bytes");
}

TEST(GgufFormat, FailsOnNonZeroPadding) {
  std::string file = SampleFile();
  const Result<GgufFile> parsed = Parse(file);
  ASSERT_TRUE(parsed);
  file[parsed->data_begin - 1] = 1;
  ExpectError(file, "non-zero padding before the data section");
}

TEST(GgufFormat, NamesEveryGgmlType) {
  EXPECT_EQ(GgmlTypeName(0), "F32");
  EXPECT_EQ(GgmlTypeName(8), "Q8_0");
  EXPECT_EQ(GgmlTypeName(14), "Q6_K");
  EXPECT_EQ(GgmlTypeName(30), "BF16");
  EXPECT_EQ(GgmlTypeName(39), "MXFP4");
  EXPECT_EQ(GgmlTypeName(1000), "unknown type 1000");
}

}  // namespace
}  // namespace inferno
