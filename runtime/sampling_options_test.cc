#include "runtime/sampling_options.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(ValidSamplingOptions, OptionsOutOfRangeAreInvalid) {
  EXPECT_TRUE(ValidSamplingOptions({}));
  EXPECT_TRUE(ValidSamplingOptions({.presence_penalty = -2.0f,
                                    .frequency_penalty = 2.0f,
                                    .repetition_penalty = kMaxRepetitionPenalty,
                                    .logprobs = kMaxTopLogprobs}));
  EXPECT_FALSE(ValidSamplingOptions({.presence_penalty = 2.01f}));
  EXPECT_FALSE(ValidSamplingOptions({.frequency_penalty = -2.01f}));
  EXPECT_FALSE(ValidSamplingOptions({.repetition_penalty = 0.0f}));
  EXPECT_FALSE(ValidSamplingOptions({.repetition_penalty = std::nanf("")}));
  EXPECT_FALSE(ValidSamplingOptions({.logprobs = -2}));
  EXPECT_FALSE(ValidSamplingOptions({.temperature = std::numeric_limits<float>::infinity()}));
}

}  // namespace
}  // namespace inferno
