#include "loader/tensor_info.h"

#include <cmath>
#include <cstring>
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
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) EXPECT_EQ(ParseDType(DTypeName(d)), d);
  EXPECT_FALSE(ParseDType("I8").has_value());
  EXPECT_EQ(DTypeSize(DType::kBF16), 2);
}

}  // namespace
}  // namespace inferno
