#include "runtime/token_logprobs.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(TokenLogprobs, LogSoftmaxOfTheTokenAndTheMostLikelyInOrder) {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  double sum = 0;
  for (float x : logits) sum += std::exp(x);
  const double log_sum = std::log(sum);
  std::vector<std::pair<float, int32_t>> scratch;
  TokenLogprobs out;
  ComputeTokenLogprobs(logits, 2, 3, scratch, out);
  EXPECT_EQ(out.token, 2);
  EXPECT_NEAR(out.logprob, -2.0 - log_sum, 1e-6);
  ASSERT_EQ(out.top.size(), 3u);
  // A tie goes to the lower id.
  EXPECT_EQ(out.top[0].token, 1);
  EXPECT_EQ(out.top[1].token, 3);
  EXPECT_EQ(out.top[2].token, 0);
  EXPECT_NEAR(out.top[0].logprob, 3.0 - log_sum, 1e-6);
  EXPECT_NEAR(out.top[2].logprob, 1.0 - log_sum, 1e-6);
}

TEST(TokenLogprobs, NoAlternativesWhenTopIsZeroAndAtMostTheVocabulary) {
  std::vector<std::pair<float, int32_t>> scratch;
  TokenLogprobs out;
  ComputeTokenLogprobs(std::vector<float>{0.0f, 0.0f}, 1, 0, scratch, out);
  EXPECT_TRUE(out.top.empty());
  EXPECT_NEAR(out.logprob, std::log(0.5), 1e-6);
  ComputeTokenLogprobs(std::vector<float>{0.0f, 0.0f}, 0, 5, scratch, out);
  EXPECT_EQ(out.top.size(), 2u);
}

TEST(TokenLogprobs, LargeLogitsDoNotOverflow) {
  std::vector<std::pair<float, int32_t>> scratch;
  TokenLogprobs out;
  ComputeTokenLogprobs(std::vector<float>{1000.0f, 1000.0f, -1000.0f}, 2, 1, scratch, out);
  EXPECT_NEAR(out.top[0].logprob, std::log(0.5), 1e-6);
  EXPECT_TRUE(std::isfinite(out.logprob));
  EXPECT_LT(out.logprob, -1000.0f);
}

}  // namespace
}  // namespace inferno
