#include "engine/rope.h"

#include <cmath>

#include <gtest/gtest.h>

namespace inferno {
namespace {

ModelConfig ConfigWithHeadDim(int64_t head_dim, float theta) {
  ModelConfig config;
  config.hidden_size = head_dim * 2;
  config.num_attention_heads = 2;
  config.rope_theta = theta;
  return config;
}

TEST(RopeInverseFrequencies, UnscaledIsThetaToTheMinusTwoIOverHeadDim) {
  const ModelConfig config = ConfigWithHeadDim(8, 10000.0f);
  const std::vector<float> inverse = RopeInverseFrequencies(config, 4096);
  ASSERT_EQ(inverse.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(inverse[i], std::pow(10000.0f, -2.0f * i / 8.0f)) << i;
}

TEST(RopeInverseFrequencies, LinearDividesEveryFrequencyByTheFactor) {
  ModelConfig config = ConfigWithHeadDim(8, 10000.0f);
  const std::vector<float> plain = RopeInverseFrequencies(config, 4096);
  config.rope_scaling = {.type = RopeScaling::Type::kLinear, .factor = 4.0f};
  const std::vector<float> scaled = RopeInverseFrequencies(config, 4096);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(scaled[i], plain[i] / 4.0f) << i;
}

// Llama 3.1's values (factor 8, low 1, high 4, original context 8192) on a
// head of 128 with theta 500000: wavelengths below 2048 keep their
// frequency, those above 8192 are divided by 8, those between are blended
// and lie strictly between the two.
TEST(RopeInverseFrequencies, Llama3KeepsHighDividesLowAndBlendsBetween) {
  ModelConfig config = ConfigWithHeadDim(128, 500000.0f);
  const std::vector<float> plain = RopeInverseFrequencies(config, 4096);
  config.rope_scaling = {.type = RopeScaling::Type::kLlama3,
                         .factor = 8.0f,
                         .low_freq_factor = 1.0f,
                         .high_freq_factor = 4.0f,
                         .original_max_position_embeddings = 8192};
  const std::vector<float> scaled = RopeInverseFrequencies(config, 4096);
  int high = 0, low = 0, blended = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    const float wavelength = 2.0f * static_cast<float>(M_PI) / plain[i];
    if (wavelength < 2048.0f) {
      EXPECT_EQ(scaled[i], plain[i]) << i;
      ++high;
    } else if (wavelength > 8192.0f) {
      EXPECT_FLOAT_EQ(scaled[i], plain[i] / 8.0f) << i;
      ++low;
    } else {
      EXPECT_LT(scaled[i], plain[i]) << i;
      EXPECT_GT(scaled[i], plain[i] / 8.0f) << i;
      ++blended;
    }
  }
  EXPECT_GT(high, 0);
  EXPECT_GT(low, 0);
  EXPECT_GT(blended, 0);
}

// Phi-3's longrope divides frequency i by short_factor[i] for a context up
// to the original length, and by long_factor[i] past it: the whole table
// switches at once, decided by the context, not by a position.
TEST(RopeInverseFrequencies, LongRopeTakesTheLongFactorsForAContextPastTheOriginal) {
  ModelConfig config = ConfigWithHeadDim(8, 10000.0f);
  const std::vector<float> plain = RopeInverseFrequencies(config, 64);
  config.rope_scaling = {.type = RopeScaling::Type::kLongRope,
                         .original_max_position_embeddings = 32,
                         .short_factor = {1.0f, 1.5f, 2.0f, 2.5f},
                         .long_factor = {3.0f, 5.0f, 7.0f, 9.0f}};
  const std::vector<float> within = RopeInverseFrequencies(config, 32);
  const std::vector<float> beyond = RopeInverseFrequencies(config, 33);
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_FLOAT_EQ(within[i], plain[i] / config.rope_scaling.short_factor[i]) << i;
    EXPECT_FLOAT_EQ(beyond[i], plain[i] / config.rope_scaling.long_factor[i]) << i;
  }
}

}  // namespace
}  // namespace inferno
