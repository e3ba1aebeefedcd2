#include "tensor/quant_blocks.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tensor/float16.h"

namespace inferno {
namespace {

TEST(QuantizeRowQ8_0, ScaleIsMaxOver127AndHalvesRoundAwayFromZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // amax: d = 1
  x[1] = -63.5f;
  x[2] = 1.0f;
  x[3] = 0.5f;
  x[4] = -0.5f;
  x[5] = 2.4f;
  x[31] = -127.0f;
  BlockQ8_0 block;
  QuantizeRowQ8_0(x, {&block, 1});
  EXPECT_EQ(block.d, 0x3c00);
  const std::vector<int8_t> expected = {127, -64, 1, 1, -1, 2};
  for (size_t j = 0; j < expected.size(); ++j) EXPECT_EQ(block.qs[j], expected[j]) << j;
  for (int j = 6; j < 31; ++j) EXPECT_EQ(block.qs[j], 0) << j;
  EXPECT_EQ(block.qs[31], -127);
}

TEST(QuantizeRowQ8_0, ScaleIsRoundedToHalfAfterDividing) {
  std::vector<float> x(32, 0.25f);
  x[7] = -1.0f;  // d = 1/127, stored as f16 0x2008 (2^-7 * (1 + 8/1024))
  BlockQ8_0 block;
  QuantizeRowQ8_0(x, {&block, 1});
  EXPECT_EQ(block.d, 0x2008);
  EXPECT_EQ(block.qs[7], -127);
  EXPECT_EQ(block.qs[0], 32);  // 0.25 * 127 = 31.75
}

TEST(QuantizeRowQ8_0, AllZeroBlockHasZeroScale) {
  std::vector<float> x(64, 0.0f);
  x[40] = 12.7f;  // the second block is not zero
  BlockQ8_0 blocks[2];
  QuantizeRowQ8_0(x, blocks);
  EXPECT_EQ(blocks[0].d, 0);
  for (int8_t q : blocks[0].qs) EXPECT_EQ(q, 0);
  EXPECT_EQ(blocks[1].qs[8], 127);
  EXPECT_EQ(blocks[1].d, FloatToHalf(12.7f / 127.0f));
}

TEST(QuantizeRowQ4_0, NegativeExtremeGivesPositiveScaleAndCodesClampAt15) {
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;  // first element of largest magnitude: d = -8 / -8 = 1
  x[1] = 8.0f;   // same magnitude, not first: code 16.5 -> 16, clamped to 15
  x[2] = 7.0f;
  x[3] = 0.4f;
  x[4] = -0.6f;
  x[5] = 0.5f;  // 9.0: x/d + 8.5 truncated, so halves go up
  x[16] = 3.0f;
  x[17] = -3.0f;
  BlockQ4_0 block;
  QuantizeRowQ4_0(x, {&block, 1});
  EXPECT_EQ(block.d, 0x3c00);
  // Low nibble: element j; high nibble: element j + 16; zero is code 8.
  const std::vector<uint8_t> expected = {0xb0, 0x5f, 0x8f, 0x88, 0x87, 0x89};
  for (size_t j = 0; j < expected.size(); ++j) EXPECT_EQ(block.qs[j], expected[j]) << j;
  for (int j = 6; j < 16; ++j) EXPECT_EQ(block.qs[j], 0x88) << j;
}

TEST(QuantizeRowQ4_0, PositiveExtremeGivesNegativeScale) {
  std::vector<float> x(32, 0.0f);
  x[0] = 4.0f;  // d = 4 / -8 = -0.5 (f16 0xb800)
  x[1] = -4.0f;
  x[2] = 1.0f;
  BlockQ4_0 block;
  QuantizeRowQ4_0(x, {&block, 1});
  EXPECT_EQ(block.d, 0xb800);
  EXPECT_EQ(block.qs[0], 0x80);  // 4 / -0.5 + 8.5 = 0.5 -> 0
  EXPECT_EQ(block.qs[1], 0x8f);  // -4 / -0.5 + 8.5 = 16.5 -> 15
  EXPECT_EQ(block.qs[2], 0x86);  // 1 / -0.5 + 8.5 = 6.5 -> 6
}

TEST(DequantizeRowQ8_0, ValueIsCodeTimesScale) {
  BlockQ8_0 block{};
  block.d = 0x3800;  // 0.5
  block.qs[0] = -128;
  block.qs[1] = 127;
  block.qs[2] = 3;
  std::vector<float> out(32);
  DequantizeRowQ8_0({&block, 1}, out);
  EXPECT_EQ(out[0], -64.0f);
  EXPECT_EQ(out[1], 63.5f);
  EXPECT_EQ(out[2], 1.5f);
  EXPECT_EQ(out[3], 0.0f);
}

TEST(DequantizeRowQ4_0, LowNibblesAreTheFirstHalf) {
  BlockQ4_0 block{};
  block.d = 0x4000;  // 2
  for (uint8_t& q : block.qs) q = 0x88;
  block.qs[0] = 0xf0;   // element 0: (0 - 8) * 2, element 16: (15 - 8) * 2
  block.qs[15] = 0x19;  // element 15: (9 - 8) * 2, element 31: (1 - 8) * 2
  std::vector<float> out(32);
  DequantizeRowQ4_0({&block, 1}, out);
  EXPECT_EQ(out[0], -16.0f);
  EXPECT_EQ(out[16], 14.0f);
  EXPECT_EQ(out[15], 2.0f);
  EXPECT_EQ(out[31], -14.0f);
  EXPECT_EQ(out[5], 0.0f);
}

TEST(QuantizeDequantize, ErrorWithinHalfAStepPlusScaleRounding) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> x(32 * 50);
  for (float& v : x) v = normal(rng);
  std::vector<BlockQ8_0> q8(50);
  std::vector<BlockQ4_0> q4(50);
  QuantizeRowQ8_0(x, q8);
  QuantizeRowQ4_0(x, q4);
  std::vector<float> back8(x.size()), back4(x.size());
  DequantizeRowQ8_0(q8, back8);
  DequantizeRowQ4_0(q4, back4);
  for (size_t b = 0; b < 50; ++b) {
    const float d8 = std::fabs(HalfToFloat(q8[b].d)), d4 = std::fabs(HalfToFloat(q4[b].d));
    for (size_t j = b * 32; j < b * 32 + 32; ++j) {
      // Half a step, plus the scale's f16 rounding (2^-11 relative) times the
      // largest code; Q4_0's clamped code 16 -> 15 costs a whole step.
      EXPECT_LE(std::fabs(back8[j] - x[j]), d8 * (0.5f + 127 * 0x1p-11f) * 1.001f) << j;
      EXPECT_LE(std::fabs(back4[j] - x[j]), d4 * (1.0f + 8 * 0x1p-11f) * 1.001f) << j;
    }
  }
}

}  // namespace
}  // namespace inferno
