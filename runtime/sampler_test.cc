#include "runtime/sampler.h"

#include <cmath>
#include <map>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::vector<int32_t> Draw(const SamplingOptions& options, const std::vector<float>& logits, int count) {
  Sampler sampler(options, static_cast<int32_t>(logits.size()));
  std::vector<int32_t> ids;
  for (int i = 0; i < count; ++i) {
    std::vector<float> scratch = logits;
    ids.push_back(sampler.Sample(scratch));
  }
  return ids;
}

const std::vector<float> kLogits = {0.1f, 2.0f, 1.5f, -1.0f, 2.0f, 0.5f};

TEST(Sampler, GreedyPicksFirstMaximum) { EXPECT_EQ(Draw({}, kLogits, 3), (std::vector<int32_t>{1, 1, 1})); }

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  SamplingOptions options{.temperature = 1.0f, .seed = 7};
  const std::vector<int32_t> first = Draw(options, kLogits, 50);
  EXPECT_EQ(Draw(options, kLogits, 50), first);
  options.seed = 8;
  EXPECT_NE(Draw(options, kLogits, 50), first);
}

TEST(Sampler, TopKKeepsOnlyTheKMostLikely) {
  const std::vector<int32_t> ids = Draw({.temperature = 1.0f, .top_k = 2, .seed = 3}, kLogits, 200);
  std::map<int32_t, int> counts;
  for (int32_t id : ids) ++counts[id];
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_GT(counts[1], 0);
  EXPECT_GT(counts[4], 0);
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  // Probabilities about 0.7, 0.26, 0.035, ...: top_p 0.9 keeps ids 0 and 1.
  const std::vector<float> logits = {5.0f, 4.0f, 2.0f, 0.0f, -1.0f};
  std::map<int32_t, int> counts;
  for (int32_t id : Draw({.temperature = 1.0f, .top_p = 0.9f, .seed = 11}, logits, 400)) ++counts[id];
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_GT(counts[0], counts[1]);
  EXPECT_GT(counts[1], 0);
}

TEST(Sampler, FullDistributionFollowsProbabilities) {
  const std::vector<float> logits = {0.0f, std::log(3.0f)};  // probabilities 1/4, 3/4
  std::map<int32_t, int> counts;
  for (int32_t id : Draw({.temperature = 1.0f, .seed = 5}, logits, 4000)) ++counts[id];
  EXPECT_NEAR(counts[1] / 4000.0, 0.75, 0.03);
}

}  // namespace
}  // namespace inferno
