#include "engine/pipeline_split.h"

#include <numeric>

#include <gtest/gtest.h>

#include "engine/toy_model.h"

namespace inferno {
namespace {

ModelConfig Config(int64_t dim, int64_t layers, int64_t vocab) {
  return ToyModelConfig({.dim = dim, .layers = layers, .heads = 4, .kv_heads = 4, .vocab = vocab});
}

TEST(ComputeBalancedLayersPerStage, SmallVocabularySplitsLayersEvenly) {
  EXPECT_EQ(ComputeBalancedLayersPerStage(Config(64, 8, 16), 4), (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(ComputeBalancedLayersPerStage(Config(64, 7, 16), 3), (std::vector<int64_t>{3, 2, 2}));
}

TEST(ComputeBalancedLayersPerStage, LargeClassifierGivesTheLastStageFewerLayers) {
  // stories15M shape: the classifier costs about 9 layers.
  const std::vector<int64_t> split = ComputeBalancedLayersPerStage(Config(288, 6, 32000), 2);
  EXPECT_EQ(split, (std::vector<int64_t>{5, 1}));
}

TEST(ComputeBalancedLayersPerStage, EveryStageGetsALayerAndAllLayersAreUsed) {
  for (int stages = 1; stages <= 5; ++stages) {
    const std::vector<int64_t> split = ComputeBalancedLayersPerStage(Config(32, 5, 259), stages);
    ASSERT_EQ(split.size(), static_cast<size_t>(stages));
    EXPECT_EQ(std::accumulate(split.begin(), split.end(), int64_t{0}), 5);
    for (int64_t layers : split) EXPECT_GE(layers, 1);
  }
}

}  // namespace
}  // namespace inferno
