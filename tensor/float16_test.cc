#include "tensor/float16.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(HalfToFloat, CoversNormalSubnormalAndSpecialValues) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc100), -2.5f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
}

TEST(FloatToHalf, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f)))) << h;
    } else {
      EXPECT_EQ(FloatToHalf(f), h) << h;
    }
  }
}

TEST(FloatToHalf, RoundsToNearestEvenBetweenNeighbours) {
  // Every midpoint between consecutive finite halves of one sign ties to the
  // even one; a hair above goes up, a hair below goes down.
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const float lo = HalfToFloat(static_cast<uint16_t>(h));
    const float hi = HalfToFloat(static_cast<uint16_t>(h + 1));
    const float mid = lo + (hi - lo) / 2;  // exact in f32
    EXPECT_EQ(FloatToHalf(mid), (h % 2 == 0) ? h : h + 1) << h;
    EXPECT_EQ(FloatToHalf(std::nextafter(mid, hi)), h + 1) << h;
    EXPECT_EQ(FloatToHalf(std::nextafter(mid, lo)), h) << h;
    EXPECT_EQ(FloatToHalf(-mid), 0x8000u | FloatToHalf(mid)) << h;
  }
}

TEST(FloatToHalf, OverflowsToInfinityAndUnderflowsToZero) {
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(FloatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(FloatToHalf(-1e-30f), 0x8000);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(FloatToBFloat16, RoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between bf16 1.0 (even) and 1 + 2^-7: down.
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
  EXPECT_EQ(FloatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(FloatToBFloat16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3f81);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(-3.140625f)), -3.140625f);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace inferno
