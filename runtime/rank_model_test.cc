#include "runtime/rank_model.h"

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "engine/toy_model.h"

namespace inferno {
namespace {

// Writes a toy model of `shape` to TEST_TMPDIR/`name` and returns the folder.
std::string ToyFolder(const std::string& name, const ToyModelShape& shape) {
  const std::string folder = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  const Status written = WriteToyModel(folder, ToyModelConfig(shape), 3);
  EXPECT_TRUE(written.ok()) << written.error().message;
  return folder;
}

// A dense toy of 4 layers and 6 heads.
ModelChoice DenseJob() {
  ToyModelShape shape;
  shape.dim = 48;
  shape.heads = 6;
  shape.kv_heads = 6;
  ModelChoice job;
  job.model = ToyFolder("dense", shape);
  return job;
}

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

TEST(FailoverGrid, ExpertParallelKeepsPlacingWholeExperts) {
  ToyModelShape shape;
  shape.architecture = "MixtralForCausalLM";
  shape.dim = 48;
  shape.heads = 6;
  shape.kv_heads = 6;
  shape.experts = 6;
  ModelChoice job;
  job.model = ToyFolder("mixture", shape);
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

TEST(CheckFailoverChoice, RegridsTakeTheGridFlagsButNotLayers) {
  ModelChoice job = DenseJob();
  job.tp = 2;
  job.pp = 2;
  EXPECT_TRUE(CheckFailoverChoice(job, /*regrids=*/true).ok());
  const Status pipeline_only = CheckFailoverChoice(job, /*regrids=*/false);
  ASSERT_FALSE(pipeline_only.ok());
  EXPECT_NE(pipeline_only.error().message.find("--tp"), std::string::npos);
  job.layers_per_stage = std::vector<int64_t>{2, 2};
  const Status layers = CheckFailoverChoice(job, /*regrids=*/true);
  ASSERT_FALSE(layers.ok());
  EXPECT_NE(layers.error().message.find("--layers"), std::string::npos);
}

}  // namespace
}  // namespace inferno
