#include "loader/shard_plan.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "loader/llama_layout.h"
#include "loader/safetensors_format.h"
#include "loader/test_models.h"

namespace inferno {
namespace {

std::unique_ptr<Checkpoint> OpenTestModel(const std::string& name, int64_t layers, bool tied) {
  const std::string folder = TestPath(name, true);
  EXPECT_TRUE(WriteTestSafetensorsModel(folder, TestConfig(layers, tied)));
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(folder);
  EXPECT_TRUE(checkpoint) << checkpoint.error().message;
  return std::move(*checkpoint);
}

int64_t StageBytes(const Checkpoint& checkpoint, const RankShard& shard) {
  int64_t bytes = 0;
  for (const TensorSlice& slice : shard.tensors)
    bytes += static_cast<int64_t>(TensorByteSize(*checkpoint.Find(slice.name)));
  return bytes;
}

TEST(MakeShardPlan, UnevenSplitOfFiveLayersOverThreeStagesMinimizesTheLargestStage) {
  std::unique_ptr<Checkpoint> checkpoint = OpenTestModel("five", 5, false);
  Result<ShardPlan> plan = MakeShardPlan(*checkpoint, 3, 1, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->ranks.size(), 3u);
  int64_t largest = 0;
  for (const RankShard& shard : plan->ranks) largest = std::max(largest, StageBytes(*checkpoint, shard));

  // Brute force over every split (a, b, 5 - a - b), each >= 1.
  int64_t best = INT64_MAX;
  for (int64_t a = 1; a <= 3; ++a) {
    for (int64_t b = 1; a + b <= 4; ++b) {
      Result<ShardPlan> other = MakeShardPlan(*checkpoint, 3, 1, std::vector<int64_t>{a, b, 5 - a - b});
      ASSERT_TRUE(other);
      int64_t worst = 0;
      for (const RankShard& shard : other->ranks) worst = std::max(worst, StageBytes(*checkpoint, shard));
      best = std::min(best, worst);
    }
  }
  EXPECT_EQ(largest, best);
}

TEST(MakeShardPlan, EmbeddingOnFirstStageHeadOnLastStageWhichIsRankZero) {
  std::unique_ptr<Checkpoint> checkpoint = OpenTestModel("layout", 5, false);
  Result<ShardPlan> plan = MakeShardPlan(*checkpoint, 3, 1, std::vector<int64_t>{1, 2, 2});
  ASSERT_TRUE(plan) << plan.error().message;
  const RankShard& last = plan->ranks[0];
  EXPECT_EQ(last.stage, 2);
  EXPECT_TRUE(last.has_head);
  EXPECT_FALSE(last.has_embedding);
  EXPECT_EQ(last.layers.begin, 3);
  EXPECT_EQ(last.layers.end, 5);
  EXPECT_EQ(last.tensors.back().name, "lm_head.weight");
  EXPECT_EQ(last.tensors[last.tensors.size() - 2].name, "model.norm.weight");
  const RankShard& first = plan->ranks[2];
  EXPECT_EQ(first.stage, 0);
  EXPECT_TRUE(first.has_embedding);
  EXPECT_FALSE(first.has_head);
  EXPECT_EQ(first.layers.size(), 1);
  EXPECT_EQ(first.tensors.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(plan->ranks[1].layers.begin, 1);
  EXPECT_EQ(plan->ranks[1].layers.end, 3);
}

TEST(MakeShardPlan, EveryTensorHasExactlyOneOwnerWithoutTensorParallelism) {
  std::unique_ptr<Checkpoint> checkpoint = OpenTestModel("owners", 4, false);
  Result<ShardPlan> plan = MakeShardPlan(*checkpoint, 4, 1, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  std::multiset<std::string> owned;
  for (const RankShard& shard : plan->ranks) {
    EXPECT_EQ(shard.layers.size(), 1);
    for (const TensorSlice& slice : shard.tensors) {
      EXPECT_EQ(slice.split_dim, -1);
      owned.insert(slice.name);
    }
  }
  std::multiset<std::string> expected;
  for (const TensorInfo& info : checkpoint->tensors()) expected.insert(info.name);
  EXPECT_EQ(owned, expected);
}

TEST(MakeShardPlan, TiedEmbeddingsGiveTheLastStageTheEmbeddingAsItsHead) {
  std::unique_ptr<Checkpoint> checkpoint = OpenTestModel("tied", 2, true);
  Result<ShardPlan> plan = MakeShardPlan(*checkpoint, 2, 1, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->ranks[0].tensors.back().name, "model.embed_tokens.weight");
  EXPECT_EQ(plan->ranks[1].tensors.front().name, "model.embed_tokens.weight");
  Result<ShardPlan> single = MakeShardPlan(*checkpoint, 1, 1, std::nullopt);
  ASSERT_TRUE(single);
  int embeddings = 0;
  for (const TensorSlice& slice : single->ranks[0].tensors)
    embeddings += slice.name == "model.embed_tokens.weight";
  EXPECT_EQ(embeddings, 1);
}

TEST(MakeShardPlan, TensorParallelSlicesSplitOutputsAndInputsMegatronStyle) {
  std::unique_ptr<Checkpoint> checkpoint = OpenTestModel("tp", 2, false);
  Result<ShardPlan> plan = MakeShardPlan(*checkpoint, 2, 2, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->world_size(), 4);
  // Stage 1 (last) is ranks 0 and 1; stage 0 is ranks 2 and 3.
  EXPECT_EQ(plan->ranks[3].stage, 0);
  EXPECT_EQ(plan->ranks[3].tp_index, 1);
  std::map<std::string, std::vector<TensorSlice>> by_name;  // slices of stage 0, in tp order
  for (int rank : {2, 3}) {
    for (const TensorSlice& slice : plan->ranks[static_cast<size_t>(rank)].tensors)
      by_name[slice.name].push_back(slice);
  }
  const std::map<std::string, std::pair<int, int64_t>> expected = {
      // suffix: (split_dim, size of the dimension)
      {"self_attn.q_proj.weight", {0, 16}},
      {"self_attn.k_proj.weight", {0, 8}},
      {"self_attn.v_proj.weight", {0, 8}},
      {"self_attn.o_proj.weight", {1, 16}},
      {"mlp.gate_proj.weight", {0, 40}},
      {"mlp.up_proj.weight", {0, 40}},
      {"mlp.down_proj.weight", {1, 40}},
      {"input_layernorm.weight", {-1, 0}},
      {"post_attention_layernorm.weight", {-1, 0}},
  };
  for (const auto& [suffix, split] : expected) {
    const std::vector<TensorSlice>& slices = by_name.at(LayerTensorName(0, suffix));
    ASSERT_EQ(slices.size(), 2u) << suffix;
    EXPECT_EQ(slices[0].split_dim, split.first) << suffix;
    if (split.first < 0) continue;
    EXPECT_EQ(slices[0].begin, 0) << suffix;
    EXPECT_EQ(slices[0].end, split.second / 2) << suffix;
    EXPECT_EQ(slices[1].begin, split.second / 2) << suffix;
    EXPECT_EQ(slices[1].end, split.second) << suffix;
  }
  EXPECT_EQ(SliceShape({16, 40}, by_name.at(LayerTensorName(0, "mlp.down_proj.weight"))[1]),
            (std::vector<int64_t>{16, 20}));
  EXPECT_EQ(by_name.at("model.embed_tokens.weight").size(), 2u);
}

TEST(MakeShardPlan, MoreStagesThanLayers) {
  std::unique_ptr<Checkpoint> checkpoint = OpenTestModel("too_many", 5, false);
  Result<ShardPlan> plan = MakeShardPlan(*checkpoint, 7, 1, std::nullopt);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message, "pp=7 exceeds the 5 layers of the model");
}

TEST(MakeShardPlan, ExplicitLayersNotSummingToTheModel) {
  std::unique_ptr<Checkpoint> checkpoint = OpenTestModel("bad_layers", 5, false);
  Result<ShardPlan> plan = MakeShardPlan(*checkpoint, 2, 1, std::vector<int64_t>{2, 2});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message, "--layers sums to 4 but the model has 5 layers");
  EXPECT_FALSE(MakeShardPlan(*checkpoint, 2, 1, std::vector<int64_t>{5, 0}));
  EXPECT_FALSE(MakeShardPlan(*checkpoint, 3, 1, std::vector<int64_t>{2, 3}));
}

TEST(MakeShardPlan, TensorParallelDegreeNotDividingHeads) {
  std::unique_ptr<Checkpoint> checkpoint = OpenTestModel("bad_tp", 2, false);
  Result<ShardPlan> plan = MakeShardPlan(*checkpoint, 1, 4, std::nullopt);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message, "tp=4 does not divide num_key_value_heads = 2");
  EXPECT_FALSE(MakeShardPlan(*checkpoint, 0, 1, std::nullopt));
}

}  // namespace
}  // namespace inferno
