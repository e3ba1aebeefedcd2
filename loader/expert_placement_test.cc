#include "loader/expert_placement.h"

#include <gtest/gtest.h>

#include "loader/test_models.h"

namespace inferno {
namespace {

ModelConfig MixtureConfig(int64_t layers, int64_t experts) {
  ModelConfig config = TestConfig(layers, false);
  config.architecture = "Qwen3MoeForCausalLM";
  config.num_experts = experts;
  config.num_experts_per_tok = 2;
  config.expert_intermediate_size = 40;
  return config;
}

TEST(ContiguousExperts, EarlierRanksTakeTheRemainder) {
  const ExpertPlacement placement = ContiguousExperts(MixtureConfig(2, 5), 3);
  const std::vector<int> expected = {0, 0, 1, 1, 2};
  EXPECT_EQ(placement.owner, (std::vector<std::vector<int>>{expected, expected}));
}

TEST(PlaceExpertsByLoad, HotExpertsGoToDifferentRanks) {
  const ModelConfig config = MixtureConfig(2, 6);
  // Layer 0: experts 0 and 1 hot (contiguous placement puts both on rank 0);
  // layer 1: uniform.
  const std::vector<std::vector<int64_t>> counts = {{40, 40, 5, 5, 5, 5}, {10, 10, 10, 10, 10, 10}};
  const ExpertPlacement placement = PlaceExpertsByLoad(config, 2, counts);
  ASSERT_TRUE(CheckExpertPlacement(config, 2, placement));
  EXPECT_NE(placement.owner[0][0], placement.owner[0][1]);
  EXPECT_DOUBLE_EQ(BusiestRankShare(placement, 2, counts, 0), 0.5);
  EXPECT_DOUBLE_EQ(BusiestRankShare(ContiguousExperts(config, 2), 2, counts, 0), 85.0 / 100.0);
  EXPECT_DOUBLE_EQ(BusiestRankShare(placement, 2, counts, 1), 0.5);
}

TEST(PlaceExpertsByLoad, EveryRankGetsAnExpertWhenMostAreNeverRouted) {
  const ModelConfig config = MixtureConfig(1, 4);
  const ExpertPlacement placement = PlaceExpertsByLoad(config, 3, {{0, 100, 0, 0}});
  EXPECT_TRUE(CheckExpertPlacement(config, 3, placement));
}

TEST(CheckExpertPlacement, NamesTheLayerAndExpert) {
  const ModelConfig config = MixtureConfig(2, 3);
  Status unowned = CheckExpertPlacement(config, 2, ExpertPlacement{{{0, 1, 0}, {0, -1, 1}}});
  ASSERT_FALSE(unowned);
  EXPECT_EQ(unowned.error().message,
            "the expert placement's layer 1 puts expert 1 on rank index -1, outside the stage's 2");
  Status short_layer = CheckExpertPlacement(config, 2, ExpertPlacement{{{0, 1}, {0, 1, 1}}});
  ASSERT_FALSE(short_layer);
  EXPECT_EQ(short_layer.error().message,
            "the expert placement's layer 0 places 2 experts but the model has 3");
}

}  // namespace
}  // namespace inferno
