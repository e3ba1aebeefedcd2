#include "loader/pipeline_split.h"

#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(EvenPart, EarlierPartsTakeTheRemainderAndPartsTileTheWhole) {
  EXPECT_EQ(EvenPart(10, 3, 0), (RowRange{0, 4}));
  EXPECT_EQ(EvenPart(10, 3, 1), (RowRange{4, 7}));
  EXPECT_EQ(EvenPart(10, 3, 2), (RowRange{7, 10}));
  EXPECT_EQ(EvenPart(2, 2, 1), (RowRange{1, 2}));
}

ModelConfig Config(int64_t dim, int64_t layers, int64_t vocab) {
  ModelConfig config;
  config.hidden_size = dim;
  config.num_hidden_layers = layers;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 4;
  config.intermediate_size = (8 * dim / 3 + 31) / 32 * 32;
  config.vocab_size = vocab;
  return config;
}

std::vector<int64_t> Rows(const ModelConfig& config, const std::vector<int64_t>& layers) {
  return ComputeBalancedClassifierRows(config, layers, config.vocab_size, 1);
}

// Multiply-adds per token of each stage: its layers plus its classifier rows.
std::vector<int64_t> StageCosts(const ModelConfig& config, const std::vector<int64_t>& layers,
                                const std::vector<int64_t>& rows) {
  const int64_t dim = config.hidden_size;
  const int64_t layer = dim * (dim + 2 * config.kv_dim()) + dim * dim + 3 * dim * config.intermediate_size;
  std::vector<int64_t> costs;
  for (size_t s = 0; s < layers.size(); ++s) costs.push_back(layers[s] * layer + rows[s] * dim);
  return costs;
}

TEST(ComputeBalancedLayersPerStage, SplitsLayersEvenlyEarlierStagesTakingTheRemainder) {
  EXPECT_EQ(ComputeBalancedLayersPerStage(Config(64, 8, 16), 4), (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(ComputeBalancedLayersPerStage(Config(64, 7, 16), 3), (std::vector<int64_t>{3, 2, 2}));
  // stories15M shape: the classifier costs about 9 layers, but it is split
  // by rows too, so the layers stay even.
  EXPECT_EQ(ComputeBalancedLayersPerStage(Config(288, 6, 32000), 2), (std::vector<int64_t>{3, 3}));
}

TEST(ComputeBalancedLayersPerStage, EveryStageGetsALayerAndAllLayersAreUsed) {
  for (int stages = 1; stages <= 5; ++stages) {
    const std::vector<int64_t> split = ComputeBalancedLayersPerStage(Config(32, 5, 259), stages);
    ASSERT_EQ(split.size(), static_cast<size_t>(stages));
    EXPECT_EQ(std::accumulate(split.begin(), split.end(), int64_t{0}), 5);
    for (int64_t layers : split) EXPECT_GE(layers, 1);
  }
}

TEST(ComputeBalancedClassifierRows, OneStageHoldsTheWholeVocabulary) {
  EXPECT_EQ(Rows(Config(288, 6, 32000), std::vector<int64_t>{6}), (std::vector<int64_t>{32000}));
}

TEST(ComputeBalancedClassifierRows, EqualLayersGetEqualRowsAndTheEarlierStageTheOddRow) {
  EXPECT_EQ(Rows(Config(288, 6, 32000), std::vector<int64_t>{3, 3}), (std::vector<int64_t>{16000, 16000}));
  EXPECT_EQ(Rows(Config(64, 4, 259), std::vector<int64_t>{2, 2}), (std::vector<int64_t>{130, 129}));
}

TEST(ComputeBalancedClassifierRows, UnevenLayersAreEvenedOutByRows) {
  // stories15M shape, 5 + 1 layers: the 1-layer stage takes more rows, and
  // the two stages end within one row's cost of each other.
  const ModelConfig config = Config(288, 6, 32000);
  const std::vector<int64_t> layers = {5, 1};
  const std::vector<int64_t> rows = Rows(config, layers);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0] + rows[1], 32000);
  EXPECT_GT(rows[1], rows[0]);
  const std::vector<int64_t> costs = StageCosts(config, layers, rows);
  EXPECT_LE(std::abs(costs[0] - costs[1]), config.hidden_size);
}

TEST(ComputeBalancedClassifierRows, AStageWhoseLayersAloneCostMoreThanAShareGetsNoRows) {
  // Toy shape: 259 rows cost less than one layer, so the 2-layer stage gets
  // none and the two 1-layer stages share them.
  const ModelConfig config = Config(64, 4, 259);
  const std::vector<int64_t> layers = {2, 1, 1};
  const std::vector<int64_t> rows = Rows(config, layers);
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 130, 129}));
  const std::vector<int64_t> costs = StageCosts(config, layers, rows);
  EXPECT_EQ(*std::max_element(costs.begin(), costs.end()), costs[0]);
}

TEST(ComputeBalancedClassifierRows, RowsSumToTheVocabularyForManyShapes) {
  for (int64_t vocab : {1, 7, 259, 32000}) {
    for (int stages = 1; stages <= 4; ++stages) {
      const ModelConfig config = Config(32, 4, vocab);
      const std::vector<int64_t> layers = ComputeBalancedLayersPerStage(config, stages);
      const std::vector<int64_t> rows = Rows(config, layers);
      ASSERT_EQ(rows.size(), static_cast<size_t>(stages));
      EXPECT_EQ(std::accumulate(rows.begin(), rows.end(), int64_t{0}), vocab) << stages << " stages";
      for (int64_t r : rows) EXPECT_GE(r, 0);
    }
  }
}

TEST(ClassifierRowsOfStage, SlicesFollowStageOrderAndTileTheVocabulary) {
  const std::vector<int64_t> rows = {5, 0, 7};
  EXPECT_EQ(ClassifierRowsOfStage(rows, 0), (RowRange{0, 5}));
  EXPECT_EQ(ClassifierRowsOfStage(rows, 1), (RowRange{5, 5}));
  EXPECT_EQ(ClassifierRowsOfStage(rows, 2), (RowRange{5, 12}));
}

}  // namespace
}  // namespace inferno
