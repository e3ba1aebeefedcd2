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
  Status unowned = CheckExpertPlacement(config, 2, ExpertPlacement{.owner = {{0, 1, 0}, {0, -1, 1}}});
  ASSERT_FALSE(unowned);
  EXPECT_EQ(unowned.error().message,
            "the expert placement's layer 1 puts expert 1 on rank index -1, outside the stage's 2");
  Status short_layer = CheckExpertPlacement(config, 2, ExpertPlacement{.owner = {{0, 1}, {0, 1, 1}}});
  ASSERT_FALSE(short_layer);
  EXPECT_EQ(short_layer.error().message,
            "the expert placement's layer 0 places 2 experts but the model has 3");
}

TEST(AddExpertReplicas, WithCountsEachRankCopiesTheMostLoadPerHolder) {
  const ModelConfig config = MixtureConfig(2, 6);
  // Layer 0: contiguous (0-2 on rank 0, 3-5 on rank 1), experts 0 and 4 hot.
  const std::vector<std::vector<int64_t>> counts = {{50, 10, 5, 20, 40, 1}, {1, 1, 1, 1, 1, 1}};
  Result<ExpertPlacement> placed = AddExpertReplicas(2, ContiguousExperts(config, 2), 2, &counts);
  ASSERT_TRUE(placed) << placed.error().message;
  ASSERT_TRUE(CheckExpertPlacement(config, 2, *placed));
  // Rank 0 copies 4 (40), rank 1 copies 0 (50); then rank 0 copies 3 (20;
  // it holds 4 now), rank 1 copies 1 (10 against 2's 5). Layer 1 (uniform):
  // the lowest indices each rank lacks, an expert already copied last.
  EXPECT_EQ(placed->copies,
            (std::vector<std::vector<std::vector<int32_t>>>{{{3, 4}, {0, 1}}, {{3, 4}, {0, 1}}}));
  EXPECT_EQ(placed->owner, ContiguousExperts(config, 2).owner);
}

TEST(AddExpertReplicas, AHotExpertGetsASecondCopyOnlyWhenItsLoadPerHolderStillLeads) {
  const ModelConfig config = MixtureConfig(1, 6);
  // 3 ranks (0-1, 2-3, 4-5); expert 0 very hot: ranks 1 and 2 both copy it
  // (100, then 100 / 2 = 50 > 9); rank 0 copies the hottest it lacks, 2.
  const std::vector<std::vector<int64_t>> counts = {{100, 1, 9, 1, 1, 1}};
  Result<ExpertPlacement> placed = AddExpertReplicas(3, ContiguousExperts(config, 3), 1, &counts);
  ASSERT_TRUE(placed) << placed.error().message;
  EXPECT_EQ(placed->copies, (std::vector<std::vector<std::vector<int32_t>>>{{{2}, {0}, {0}}}));
}

TEST(AddExpertReplicas, WithoutCountsCopiesSpreadOverDistinctExperts) {
  const ModelConfig config = MixtureConfig(1, 7);
  Result<ExpertPlacement> placed = AddExpertReplicas(2, ContiguousExperts(config, 2), 3);
  ASSERT_TRUE(placed) << placed.error().message;
  // Rank 0 holds 0-3, rank 1 4-6.
  EXPECT_EQ(placed->copies, (std::vector<std::vector<std::vector<int32_t>>>{{{4, 5, 6}, {0, 1, 2}}}));
  Result<ExpertPlacement> none = AddExpertReplicas(2, ContiguousExperts(config, 2), 0);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, ContiguousExperts(config, 2));
}

TEST(AddExpertReplicas, RefusesNegativeAndMoreThanTheOthersHold) {
  const ModelConfig config = MixtureConfig(1, 7);
  Result<ExpertPlacement> negative = AddExpertReplicas(2, ContiguousExperts(config, 2), -1);
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error().message, "--expert-replicas -1 must be at least 0");
  Result<ExpertPlacement> too_many = AddExpertReplicas(2, ContiguousExperts(config, 2), 4);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().message,
            "--expert-replicas 4 exceeds the 3 experts of layer 0 that rank index 0 does not own");
  EXPECT_TRUE(AddExpertReplicas(2, ContiguousExperts(config, 2), 3));
}

TEST(CheckExpertPlacement, RefusesBadCopies) {
  const ModelConfig config = MixtureConfig(1, 3);
  const std::vector<std::vector<int>> owner = {{0, 0, 1}};
  const auto check = [&](std::vector<std::vector<std::vector<int32_t>>> copies) {
    Status status = CheckExpertPlacement(config, 2, ExpertPlacement{owner, std::move(copies)});
    return status ? std::string("ok") : status.error().message;
  };
  EXPECT_EQ(check({{{2}, {0, 1}}}), "ok");
  EXPECT_EQ(check({{{2}, {0, 1}}, {{}, {}}}),
            "the expert placement lists the copies of 2 layers but the model has 1");
  EXPECT_EQ(check({{{2}}}), "the expert placement's layer 0 lists the copies of 1 ranks but the stage has 2");
  EXPECT_EQ(check({{{2}, {0, 0}}}),
            "the expert placement's layer 0 has rank index 1 copy expert 0 twice or out of order");
  EXPECT_EQ(check({{{1}, {}}}),
            "the expert placement's layer 0 has rank index 0 copy expert 1, which it owns");
  EXPECT_EQ(check({{{3}, {}}}),
            "the expert placement's layer 0 has rank index 0 copy expert 3, which it does not have");
  // A rank owning nothing but holding copies holds experts.
  Status copies_only =
      CheckExpertPlacement(config, 2, ExpertPlacement{.owner = {{0, 0, 0}}, .copies = {{{}, {1}}}});
  EXPECT_TRUE(copies_only) << copies_only.error().message;
}

}  // namespace
}  // namespace inferno
