#include "loader/routing_stats.h"

#include <gtest/gtest.h>

#include "loader/test_models.h"

namespace inferno {
namespace {

ModelConfig MixtureConfig() { return TestMixtureConfig("Qwen3MoeForCausalLM", 3, 2); }

TEST(RoutingStats, RoundTrips) {
  const ModelConfig config = MixtureConfig();
  const RoutingCounts counts = {{4, 0, 2}, {1, 2, 3}};
  Result<RoutingCounts> parsed = ParseRoutingStats(RoutingStatsToJson(config, counts), "s.json", config);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, counts);
}

TEST(RoutingStats, StatsOfAnotherModelAreRefusedNamingWhatDiffers) {
  const ModelConfig config = MixtureConfig();
  const auto error = [&](const RoutingCounts& counts) {
    Result<RoutingCounts> parsed = ParseRoutingStats(RoutingStatsToJson(config, counts), "s.json", config);
    return parsed ? std::string("accepted") : parsed.error().message;
  };
  EXPECT_EQ(error({{1, 2, 3}}), "s.json: counts 1 layers but the model has 2");
  EXPECT_EQ(error({{1, 2, 3}, {1, 2}}), "s.json: layer 1 counts 2 experts but the model has 3");
  EXPECT_EQ(error({{1, 2, 3}, {1, -2, 0}}), "s.json: layer 1 expert 1 has a negative count -2");
  Result<RoutingCounts> other = ParseRoutingStats("{\"format\": \"x\"}", "s.json", config);
  ASSERT_FALSE(other);
  EXPECT_EQ(
      other.error().message,
      "s.json: not inferno routing stats (no \"format\": \"inferno-routing-stats\"; infer --routing-stats "
      "writes them)");
}

TEST(GatherRoutingCounts, TakesEachStagesFirstRank) {
  const ModelConfig config = MixtureConfig();
  Result<ShardPlan> plan = MakeShardPlan(config, 2, 2, std::nullopt, /*expert_parallel=*/true);
  ASSERT_TRUE(plan);
  // Rank r of stage s = (pp - 1 - s) * tp + t: ranks 2, 3 hold layer 0, ranks 0, 1 layer 1.
  const std::vector<std::vector<std::byte>> bytes = {
      EncodeStageCounts(std::vector<int64_t>{7, 8, 9}), EncodeStageCounts(std::vector<int64_t>{0, 0, 0}),
      EncodeStageCounts(std::vector<int64_t>{1, 2, 3}), EncodeStageCounts(std::vector<int64_t>{0, 0, 0})};
  Result<RoutingCounts> counts = GatherRoutingCounts(config, *plan, bytes);
  ASSERT_TRUE(counts) << counts.error().message;
  EXPECT_EQ(*counts, (RoutingCounts{{1, 2, 3}, {7, 8, 9}}));
  Result<RoutingCounts> short_rank =
      GatherRoutingCounts(config, *plan, {EncodeStageCounts(std::vector<int64_t>{7, 8}), {}, bytes[2], {}});
  ASSERT_FALSE(short_rank);
  EXPECT_EQ(short_rank.error().message, "routing counts of rank 0: 16 bytes, not the 24 of its 1 layers");
}

}  // namespace
}  // namespace inferno
