#include "tensor/k_quantizer.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

template <typename Block>
bool AllZeroBytes(const Block& block) {
  const Block zero{};
  return std::memcmp(&block, &zero, sizeof(Block)) == 0;
}

TEST(KQuantizer, AllZeroSuperBlockIsAllZeroBytes) {
  const std::vector<float> zeros(256, 0.0f);
  BlockQ2_K q2;
  QuantizeRowQ2_K(zeros, {&q2, 1});
  EXPECT_TRUE(AllZeroBytes(q2));
  BlockQ3_K q3;
  QuantizeRowQ3_K(zeros, {&q3, 1});
  EXPECT_TRUE(AllZeroBytes(q3));
  BlockQ4_K q4;
  QuantizeRowQ4_K(zeros, {&q4, 1});
  EXPECT_TRUE(AllZeroBytes(q4));
  BlockQ5_K q5;
  QuantizeRowQ5_K(zeros, {&q5, 1});
  EXPECT_TRUE(AllZeroBytes(q5));
  BlockQ6_K q6;
  QuantizeRowQ6_K(zeros, {&q6, 1});
  EXPECT_TRUE(AllZeroBytes(q6));
}

TEST(KQuantizer, AllZeroIq4BlocksDequantizeToZero) {
  // ggml writes d = -0 and the codes of 0 (index 8) here, not zero bytes.
  const std::vector<float> zeros(256, 0.0f);
  BlockIQ4_XS xs;
  QuantizeRowIQ4_XS(zeros, {&xs, 1});
  BlockIQ4_NL nl[8];
  QuantizeRowIQ4_NL(zeros, nl);
  std::vector<float> back(256, 1.0f);
  DequantizeRowIQ4_XS({&xs, 1}, back);
  for (float v : back) EXPECT_EQ(v, 0.0f);
  back.assign(256, 1.0f);
  DequantizeRowIQ4_NL(nl, back);
  for (float v : back) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace inferno
