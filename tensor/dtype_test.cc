#include "tensor/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(ConvertToF32, F16CoversNormalSubnormalAndSpecialValues) {
  // 1.0, -2.5, smallest subnormal 2^-24, largest finite 65504, +inf.
  const std::vector<uint16_t> half = {0x3c00, 0xc100, 0x0001, 0x7bff, 0x7c00};
  std::vector<float> out(half.size());
  ConvertToF32(DType::kF16, reinterpret_cast<const std::byte*>(half.data()), out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.5f);
  EXPECT_EQ(out[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(out[3], 65504.0f);
  EXPECT_TRUE(std::isinf(out[4]));
}

TEST(ConvertToF32, BF16IsTheHighHalfOfF32) {
  const std::vector<float> values = {1.0f, -3.140625f, 1e-3f};
  std::vector<uint16_t> bf16;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    bf16.push_back(static_cast<uint16_t>(bits >> 16));
  }
  std::vector<float> out(values.size());
  ConvertToF32(DType::kBF16, reinterpret_cast<const std::byte*>(bf16.data()), out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -3.140625f);
  EXPECT_NEAR(out[2], 1e-3f, 1e-5f);
}

TEST(ConvertToF32, F32FromUnalignedSource) {
  std::vector<std::byte> buffer(1 + 2 * sizeof(float));
  const float values[2] = {0.5f, -7.0f};
  std::memcpy(buffer.data() + 1, values, sizeof(values));
  std::vector<float> out(2);
  ConvertToF32(DType::kF32, buffer.data() + 1, out);
  EXPECT_EQ(out, std::vector<float>({0.5f, -7.0f}));
}

TEST(ParseDType, RoundTripsNamesAndRejectsOthers) {
  for (DType d : kAllDTypes) EXPECT_EQ(ParseDType(DTypeName(d)), d);
  EXPECT_EQ(ParseDType("Q8_0"), DType::kQ8_0);
  EXPECT_EQ(ParseDType("Q4_0"), DType::kQ4_0);
  EXPECT_FALSE(ParseDType("I8").has_value());
  EXPECT_FALSE(ParseDType("q8_0").has_value());
  EXPECT_EQ(DTypeNames(),
            "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS");
}

TEST(DTypeBytes, CountsWholeBlocks) {
  EXPECT_EQ(DTypeBytes(DType::kF32, 3).value(), 12);
  EXPECT_EQ(DTypeBytes(DType::kBF16, 3).value(), 6);
  EXPECT_EQ(DTypeBytes(DType::kF16, 0).value(), 0);
  EXPECT_EQ(DTypeBytes(DType::kQ8_0, 64).value(), 68);
  EXPECT_EQ(DTypeBytes(DType::kQ4_0, 288).value(), 9 * 18);
}

TEST(DTypeBytes, PartialBlockIsAnError) {
  const Result<int64_t> bytes = DTypeBytes(DType::kQ4_0, 33);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(bytes.error().message.find("33 elements of Q4_0"), std::string::npos) << bytes.error().message;
  EXPECT_FALSE(DTypeBytes(DType::kF32, -1).ok());
  EXPECT_FALSE(DTypeBytes(DType::kF32, INT64_MAX / 2).ok());
}

TEST(ConvertToF32, Q8_0AndQ4_0FromUnalignedSource) {
  // Two Q8_0 blocks then one Q4_0 block, one byte into the buffer.
  std::vector<std::byte> buffer(1 + 2 * 34 + 18, std::byte{0});
  const uint16_t two = 0x4000, half = 0x3800;
  std::memcpy(&buffer[1], &two, 2);
  buffer[1 + 2 + 5] = std::byte{static_cast<uint8_t>(-3)};
  std::memcpy(&buffer[1 + 34], &half, 2);
  buffer[1 + 34 + 2 + 31] = std::byte{100};
  std::memcpy(&buffer[1 + 68], &half, 2);
  for (int j = 0; j < 16; ++j) buffer[1 + 68 + 2 + j] = std::byte{0x88};
  buffer[1 + 68 + 2 + 3] = std::byte{0xa1};  // element 3: (1 - 8) / 2, element 19: (10 - 8) / 2

  std::vector<float> q8(64);
  ConvertToF32(DType::kQ8_0, buffer.data() + 1, q8);
  EXPECT_EQ(q8[5], -6.0f);
  EXPECT_EQ(q8[32 + 31], 50.0f);
  EXPECT_EQ(q8[0], 0.0f);
  std::vector<float> q4(32);
  ConvertToF32(DType::kQ4_0, buffer.data() + 1 + 68, q4);
  EXPECT_EQ(q4[3], -3.5f);
  EXPECT_EQ(q4[19], 1.0f);
  EXPECT_EQ(q4[0], 0.0f);
}

TEST(ConvertFromF32, RoundTripsThroughEveryDType) {
  // More blocks and super-blocks than one conversion chunk (16 blocks).
  std::vector<float> values(256 * 20);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.37f * static_cast<float>(i));
  // Block maxima are ~1, so the error bound is about half a quantization
  // step (a clamped code costs a whole one): Q8_0 1/127, Q4_0 1/8, Q5_0
  // 1/16, Q4_1 and Q5_1 2/15 and 2/31, IQ4 grid gaps up to 24/127, the
  // K-quants a few steps of their 2 to 6 bits; F16 and BF16 keep 11 and 8
  // significant bits.
  const auto tolerance = [](DType dtype) {
    switch (dtype) {
      case DType::kF32:
        return 0.0f;
      case DType::kF16:
        return 0.0005f;
      case DType::kBF16:
        return 0.004f;
      case DType::kQ8_0:
        return 0.0045f;
      case DType::kQ4_0:
        return 0.126f;
      case DType::kQ4_1:
        return 0.07f;
      case DType::kQ5_0:
        return 0.0626f;
      case DType::kQ5_1:
        return 0.035f;
      case DType::kIQ4_NL:
      case DType::kIQ4_XS:
        return 0.13f;
      case DType::kQ2_K:
        return 0.4f;
      case DType::kQ3_K:
        return 0.25f;
      case DType::kQ4_K:
        return 0.1f;
      case DType::kQ5_K:
        return 0.05f;
      case DType::kQ6_K:
        return 0.025f;
    }
    return 0.0f;
  };
  for (DType dtype : kAllDTypes) {
    std::vector<std::byte> stored(static_cast<size_t>(DTypeBytes(dtype, values.size()).value()) + 1);
    ASSERT_TRUE(ConvertFromF32(dtype, values, stored.data() + 1).ok()) << DTypeName(dtype);
    std::vector<float> back(values.size());
    ConvertToF32(dtype, stored.data() + 1, back);
    float worst = 0.0f;
    for (size_t i = 0; i < values.size(); ++i) worst = std::max(worst, std::fabs(back[i] - values[i]));
    EXPECT_LE(worst, tolerance(dtype)) << DTypeName(dtype);
  }
}

// FNV-1a, 64 bits.
uint64_t Fnv1a(const std::vector<std::byte>& bytes) {
  uint64_t hash = 0xcbf29ce484222325;
  for (std::byte b : bytes) hash = (hash ^ static_cast<uint8_t>(b)) * 0x100000001b3;
  return hash;
}

TEST(ConvertFromF32, BlocksEqualLlamaCppsForAFixedInput) {
  // 8 super-blocks of integers in [-2000, 2000] from an LCG, super-block s
  // scaled by 2^(3s - 18) (exact in f32), half the sub-blocks of
  // super-block 5 zero. The digests are of the blocks llama.cpp writes for
  // this input (ggml_quantize_chunk of libggml-base, node-llama-cpp 3.21.1),
  // so this holds the bytes to llama.cpp's without its libraries;
  // tests/llama_cpp_quant_test.py compares many more inputs directly.
  std::vector<float> values(2048);
  uint64_t state = 27;
  for (size_t i = 0; i < values.size(); ++i) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    const int super_block = static_cast<int>(i / 256);
    const auto v = static_cast<int>((state >> 33) % 4001) - 2000;
    values[i] = super_block == 5 && (i / 16) % 2 == 0
                    ? 0.0f
                    : std::ldexp(static_cast<float>(v), 3 * super_block - 18);
  }
  const std::pair<DType, uint64_t> digests[] = {
      {DType::kQ8_0, 0x3cc8b964636aa328}, {DType::kQ4_0, 0x25dda7fc44a24c6c},
      {DType::kQ4_1, 0xbf9b2a1d5f3db051}, {DType::kQ5_0, 0xc92d82c508a25f8f},
      {DType::kQ5_1, 0x94f63d7cf9f95bd2}, {DType::kIQ4_NL, 0xa2c0a7adb304052d},
      {DType::kQ2_K, 0x1b7a79b390326d46}, {DType::kQ3_K, 0x2ff8c8ea3fb6fd93},
      {DType::kQ4_K, 0x2d782f275f67d04b}, {DType::kQ5_K, 0x6d9436c5102febb3},
      {DType::kQ6_K, 0x6a02732716018e78}, {DType::kIQ4_XS, 0xd609929a7c2b9017},
  };
  for (const auto& [dtype, digest] : digests) {
    std::vector<std::byte> stored(static_cast<size_t>(DTypeBytes(dtype, values.size()).value()));
    ASSERT_TRUE(ConvertFromF32(dtype, values, stored.data()).ok()) << DTypeName(dtype);
    EXPECT_EQ(Fnv1a(stored), digest) << DTypeName(dtype);
  }
}

TEST(ConvertFromF32, NonFiniteValueCannotBeQuantized) {
  std::vector<float> values(32, 1.0f);
  values[9] = std::nanf("");
  std::vector<std::byte> stored(34);
  const Status s = ConvertFromF32(DType::kQ8_0, values, stored.data());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("element 9"), std::string::npos) << s.error().message;
  EXPECT_FALSE(ConvertFromF32(DType::kQ4_0, std::span<const float>(values).first(16), stored.data()).ok());
}

}  // namespace
}  // namespace inferno
