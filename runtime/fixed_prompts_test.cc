#include "runtime/fixed_prompts.h"

#include <gtest/gtest.h>

#include <vector>

namespace inferno {
namespace {

const auto kNow = std::chrono::steady_clock::time_point{};

TEST(FixedPrompts, GivesEachPromptOnceAndKeepsItsTokens) {
  const std::vector<std::vector<int32_t>> prompts = {{1, 5}, {1, 6, 7}};
  FixedPrompts source(prompts, 4, SamplingOptions{}, nullptr);
  std::optional<SequenceSpec> first = source.Next(kNow);
  std::optional<SequenceSpec> second = source.Next(kNow);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->id, 0);
  EXPECT_EQ(first->prompt, prompts[0]);
  EXPECT_EQ(first->max_new_tokens, 4);
  EXPECT_EQ(second->id, 1);
  EXPECT_FALSE(source.Next(kNow).has_value());
  EXPECT_TRUE(source.Exhausted());
  source.OnToken(1, 7, 9);
  source.OnToken(0, 5, 8);
  EXPECT_EQ(source.generated(), (std::vector<std::vector<int32_t>>{{8}, {9}}));
}

TEST(FixedPrompts, ContinuesTheSequencesNotEndedFromTheirTokens) {
  const std::vector<std::vector<int32_t>> prompts = {{1, 5}, {1, 6}, {1, 7}};
  FixedPrompts source(prompts, 4, SamplingOptions{}, nullptr);
  while (source.Next(kNow)) {
  }
  // Sequence 0 ended; 1 had two tokens, 2 none when the run failed.
  source.OnToken(0, 5, 10);
  source.OnSequenceDone(0, FinishReason::kStopToken);
  source.OnToken(1, 6, 11);
  source.OnToken(1, 11, 12);
  EXPECT_EQ(source.Continue(), 2);
  EXPECT_FALSE(source.Exhausted());
  std::optional<SequenceSpec> one = source.Next(kNow);
  std::optional<SequenceSpec> two = source.Next(kNow);
  ASSERT_TRUE(one && two);
  EXPECT_EQ(one->id, 1);
  EXPECT_EQ(one->prompt, (std::vector<int32_t>{1, 6, 11, 12}));
  EXPECT_EQ(one->max_new_tokens, 2);
  EXPECT_EQ(two->id, 2);
  EXPECT_EQ(two->prompt, prompts[2]);
  EXPECT_EQ(two->max_new_tokens, 4);
  EXPECT_FALSE(source.Next(kNow).has_value());
  source.OnToken(1, 12, 13);
  EXPECT_EQ(source.generated()[1], (std::vector<int32_t>{11, 12, 13}));
}

}  // namespace
}  // namespace inferno
