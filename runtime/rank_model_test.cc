#include "runtime/rank_model.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/toy_model.h"
#include "loader/expert_placement.h"
#include "loader/routing_stats.h"

namespace inferno {
namespace {

// Writes a toy model of `shape` to TEST_TMPDIR/`name` and returns the folder.
std::string ToyFolder(const std::string& name, const ToyModelShape& shape) {
  const std::string folder = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  const Status written = WriteToyModel(folder, ToyModelConfig(shape), 3);
  EXPECT_TRUE(written.ok()) << written.error().message;
  return folder;
}

// A --model job of a toy of 4 layers and 6 heads of dim 48: dense, or with
// `experts` experts (Mixtral).
ModelChoice ToyJob(int64_t experts = 0) {
  ToyModelShape shape;
  shape.dim = 48;
  shape.heads = 6;
  shape.kv_heads = 6;
  if (experts > 0) {
    shape.architecture = "MixtralForCausalLM";
    shape.experts = experts;
  }
  ModelChoice job;
  job.model = ToyFolder(experts > 0 ? "mixture" : "dense", shape);
  return job;
}

ModelChoice DenseJob() { return ToyJob(); }

TEST(FailoverGrid, KeepsTheDegreeWhileItDividesTheMembers) {
  ModelChoice job = DenseJob();
  job.tp = 2;
  job.pp = 2;
  for (int members : {4, 2}) {
    Result<ModelChoice> grid = FailoverGrid(job, members);
    ASSERT_TRUE(grid.ok()) << grid.error().message;
    EXPECT_EQ(grid->tp, 2) << members;
    EXPECT_FALSE(grid->pp.has_value()) << "--pp follows the members: " << members << " / 2";
    EXPECT_FALSE(grid->ep.has_value());
  }
}

TEST(FailoverGrid, TakesTheLargestDegreeThatDividesTheMembers) {
  ModelChoice job = DenseJob();
  job.tp = 3;
  Result<ModelChoice> two = FailoverGrid(job, 2);
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->tp, 2);
  job.tp = 2;
  Result<ModelChoice> three = FailoverGrid(job, 3);
  ASSERT_TRUE(three.ok()) << three.error().message;
  EXPECT_EQ(three->tp, 1) << "2 divides no 3 ranks: a pipeline of 3 stages";
}

TEST(FailoverGrid, PipelineJobStaysAPipeline) {
  Result<ModelChoice> grid = FailoverGrid(DenseJob(), 2);
  ASSERT_TRUE(grid.ok()) << grid.error().message;
  EXPECT_FALSE(grid->tp.has_value());
  EXPECT_FALSE(grid->ep.has_value());
}

// A Mixtral toy of 6 experts.
ModelChoice MixtureJob() { return ToyJob(6); }

TEST(FailoverGrid, ExpertParallelKeepsPlacingWholeExperts) {
  ModelChoice job = MixtureJob();
  job.ep = 3;
  Result<ModelChoice> grid = FailoverGrid(job, 2);
  ASSERT_TRUE(grid.ok()) << grid.error().message;
  EXPECT_EQ(grid->ep, 2);
  EXPECT_FALSE(grid->tp.has_value());
  Result<RankModel> opened = OpenRankModel(*grid, 1, 2);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  EXPECT_TRUE(opened->plan.expert_parallel);
  EXPECT_EQ(opened->plan.tp, 2);
}

TEST(FailoverGrid, ExpertsByLoadArePlacedOverTheNewDegree) {
  ModelChoice job = MixtureJob();
  Result<RankModel> whole = OpenRankModel(job, 0, 1);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  const ModelConfig& config = whole->checkpoint->config();
  // Experts 0 and 1 hot in every layer: contiguous halves would put both on
  // tensor-parallel index 0; placed by load they go to different ranks.
  const RoutingCounts counts(static_cast<size_t>(config.num_hidden_layers), {100, 90, 1, 1, 1, 1});
  job.experts_by_load = std::string(std::getenv("TEST_TMPDIR")) + "/stats.json";
  std::ofstream(*job.experts_by_load) << RoutingStatsToJson(config, counts);
  job.ep = 3;
  Result<ModelChoice> grid = FailoverGrid(job, 2);
  ASSERT_TRUE(grid.ok()) << grid.error().message;
  EXPECT_EQ(grid->ep, 2);
  EXPECT_EQ(grid->experts_by_load, job.experts_by_load);
  Result<RankModel> opened = OpenRankModel(*grid, 0, 2);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  const ExpertPlacement placement = opened->plan.Placement(config.num_hidden_layers, config.num_experts);
  for (const std::vector<int>& owner : placement.owner) {
    ASSERT_EQ(owner.size(), 6u);
    EXPECT_NE(owner[0], owner[1]) << "the two hot experts on one rank";
  }
}

TEST(FailoverGrid, ExpertReplicasAreCopiedOverTheNewDegreeAndNoneOnOneRank) {
  ModelChoice job = MixtureJob();  // 6 experts
  job.ep = 3;
  job.expert_replicas = 2;
  Result<ModelChoice> two = FailoverGrid(job, 2);
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->ep, 2);
  EXPECT_EQ(two->expert_replicas, 2);
  Result<RankModel> opened = OpenRankModel(*two, 1, 2);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  for (const std::vector<int32_t>& held : opened->plan.ranks[1].experts) EXPECT_EQ(held.size(), 5u);
  EXPECT_FALSE(opened->plan.ranks[1].expert_holders.empty());
  Result<ModelChoice> one = FailoverGrid(job, 1);
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->ep, 1);
  EXPECT_EQ(one->expert_replicas, 0);
}

TEST(FailoverGrid, NoGridOverTheMembersNamesWhy) {
  ToyModelShape shape;
  shape.layers = 2;
  ModelChoice job;
  job.model = ToyFolder("two_layers", shape);
  job.tp = 2;
  Result<ModelChoice> grid = FailoverGrid(job, 3);
  ASSERT_FALSE(grid.ok());
  EXPECT_EQ(grid.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(grid.error().message.find("no grid over 3 ranks"), std::string::npos) << grid.error().message;
  EXPECT_NE(grid.error().message.find("--pp 3 exceeds the 2 layers"), std::string::npos)
      << grid.error().message;
}

TEST(CheckFailoverChoice, TakesTheGridFlagsButNotLayers) {
  ModelChoice job = DenseJob();
  job.tp = 2;
  job.pp = 2;
  EXPECT_TRUE(CheckFailoverChoice(job).ok());
  job.layers_per_stage = std::vector<int64_t>{2, 2};
  const Status layers = CheckFailoverChoice(job);
  ASSERT_FALSE(layers.ok());
  EXPECT_NE(layers.error().message.find("--layers"), std::string::npos);
}

}  // namespace
}  // namespace inferno
