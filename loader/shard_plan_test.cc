#include "loader/shard_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "loader/test_models.h"
#include "model/llama_layout.h"

namespace inferno {
namespace {

TEST(MakeShardPlan, EmbeddingOnFirstStageFinalNormOnLastStageWhichIsRankZero) {
  Result<ShardPlan> plan = MakeShardPlan(TestConfig(5, false), 3, 1, std::vector<int64_t>{1, 2, 2});
  ASSERT_TRUE(plan) << plan.error().message;
  const RankShard& last = plan->ranks[0];
  EXPECT_EQ(last.stage, 2);
  EXPECT_TRUE(last.has_final_norm);
  EXPECT_EQ(last.embedding_rows.size(), 0);
  EXPECT_EQ(last.layers, (LayerRange{3, 5}));
  const RankShard& first = plan->ranks[2];
  EXPECT_EQ(first.stage, 0);
  EXPECT_EQ(first.embedding_rows, (RowRange{0, TestConfig(5, false).vocab_size}));
  EXPECT_FALSE(first.has_final_norm);
  EXPECT_EQ(first.layers.size(), 1);
  EXPECT_EQ(first.tensors.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(plan->ranks[1].layers, (LayerRange{1, 3}));
}

// Under tensor parallelism every rank of the first stage holds the whole
// embedding, so a lookup needs no collective, and with tied embeddings its
// classifier rows are read from it.
TEST(MakeShardPlan, FirstStageRanksEachHoldTheWholeEmbedding) {
  for (const bool tied : {false, true}) {
    const ModelConfig config = TestConfig(4, tied);
    Result<ShardPlan> plan = MakeShardPlan(config, 2, 3, std::nullopt);
    ASSERT_TRUE(plan) << plan.error().message;
    for (int t = 0; t < 3; ++t) {
      const RankShard& first = plan->ranks[static_cast<size_t>(plan->RankOf(0, t))];
      EXPECT_EQ(first.embedding_rows, (RowRange{0, config.vocab_size}));
      EXPECT_EQ(first.tensors.front(), (TensorSlice{"model.embed_tokens.weight", -1, 0, 0}));
      // Tied: no second slice of the embedding for the classifier rows.
      EXPECT_EQ(
          std::count_if(first.tensors.begin(), first.tensors.end(),
                        [](const TensorSlice& slice) { return slice.name == "model.embed_tokens.weight"; }),
          1);
      EXPECT_GE(first.classifier_rows.begin, first.embedding_rows.begin);
      EXPECT_LE(first.classifier_rows.end, first.embedding_rows.end);
      EXPECT_EQ(plan->ranks[static_cast<size_t>(plan->RankOf(1, t))].embedding_rows.size(), 0);
    }
  }
}

TEST(MakeShardPlan, LayersAreEvenWithoutAnExplicitSplit) {
  Result<ShardPlan> plan = MakeShardPlan(TestConfig(5, false), 3, 1, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->ranks[2].layers, (LayerRange{0, 2}));
  EXPECT_EQ(plan->ranks[1].layers, (LayerRange{2, 4}));
  EXPECT_EQ(plan->ranks[0].layers, (LayerRange{4, 5}));
}

// Every (row, tensor) of the model is held by exactly the ranks the grid
// says: each classifier row once, each layer's q/k/v/gate/up rows and
// o/down columns once per stage (KV heads possibly more than once).
TEST(MakeShardPlan, ClassifierRowsTileTheVocabularyOncePerGridAndRingsHoldContiguousRows) {
  for (const auto& [pp, tp] : std::vector<std::pair<int, int>>{{1, 1}, {1, 3}, {2, 2}, {3, 1}, {2, 4}}) {
    const ModelConfig config = TestConfig(4, false);
    Result<ShardPlan> plan = MakeShardPlan(config, pp, tp, std::nullopt);
    ASSERT_TRUE(plan) << plan.error().message;
    std::vector<int> holders(static_cast<size_t>(config.vocab_size), 0);
    for (const RankShard& shard : plan->ranks) {
      for (int64_t row = shard.classifier_rows.begin; row < shard.classifier_rows.end; ++row) ++holders[row];
    }
    for (int count : holders) EXPECT_EQ(count, 1) << pp << "x" << tp;
    int64_t next = 0;
    for (int t = 0; t < tp; ++t) {
      const RowRange ring = plan->TpClassifierRows(t);
      EXPECT_EQ(ring.begin, next);
      next = ring.end;
      int64_t row = ring.begin;
      for (int stage = 0; stage < pp; ++stage) {
        const RankShard& shard = plan->ranks[static_cast<size_t>(plan->RankOf(stage, t))];
        EXPECT_EQ(shard.classifier_rows.begin, row) << "stage order within a ring";
        row = shard.classifier_rows.end;
      }
      EXPECT_EQ(row, ring.end);
    }
    EXPECT_EQ(next, config.vocab_size);
  }
}

TEST(MakeShardPlan, UnevenTensorParallelSplitsCoverHeadsAndUnitsAndReplicateKvHeads) {
  // 4 heads over 3 ranks: 2, 1, 1; 2 KV heads (2 heads each): rank 0 reads
  // KV head 0, rank 1 KV head 1, rank 2 KV head 1 too.
  const ModelConfig config = TestConfig(2, false);
  Result<ShardPlan> plan = MakeShardPlan(config, 1, 3, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->ranks[0].heads, (RowRange{0, 2}));
  EXPECT_EQ(plan->ranks[1].heads, (RowRange{2, 3}));
  EXPECT_EQ(plan->ranks[2].heads, (RowRange{3, 4}));
  EXPECT_EQ(plan->ranks[0].kv_heads, (RowRange{0, 1}));
  EXPECT_EQ(plan->ranks[1].kv_heads, (RowRange{1, 2}));
  EXPECT_EQ(plan->ranks[2].kv_heads, (RowRange{1, 2}));
  EXPECT_EQ(plan->ranks[0].hidden_units, (RowRange{0, 14}));
  EXPECT_EQ(plan->ranks[1].hidden_units, (RowRange{14, 27}));
  EXPECT_EQ(plan->ranks[2].hidden_units, (RowRange{27, 40}));
  // 4 ranks, 2 KV heads: each KV head on two ranks.
  Result<ShardPlan> four = MakeShardPlan(config, 1, 4, std::nullopt);
  ASSERT_TRUE(four) << four.error().message;
  for (int t = 0; t < 4; ++t) EXPECT_EQ(four->ranks[t].kv_heads, (RowRange{t / 2, t / 2 + 1}));
}

TEST(MakeShardPlan, TensorParallelSlicesSplitOutputsAndInputsMegatronStyle) {
  Result<ShardPlan> plan = MakeShardPlan(TestConfig(2, false), 2, 2, std::nullopt);
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
  // Each rank's classifier rows are its own slice of lm_head.
  for (const RankShard& shard : plan->ranks) {
    if (shard.classifier_rows.size() == 0) continue;
    EXPECT_EQ(shard.tensors.back(),
              (TensorSlice{"lm_head.weight", 0, shard.classifier_rows.begin, shard.classifier_rows.end}));
  }
}

TEST(MakeShardPlan, WithoutParallelismEveryTensorIsWholeOnOneRank) {
  const ModelConfig config = TestConfig(4, false);
  Result<ShardPlan> plan = MakeShardPlan(config, 1, 1, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  std::multiset<std::string> owned;
  for (const TensorSlice& slice : plan->ranks[0].tensors) {
    EXPECT_EQ(slice.split_dim, -1) << slice.name;
    owned.insert(slice.name);
  }
  std::multiset<std::string> expected;
  for (const TensorSpec& spec : LlamaTensorSpecs(config)) expected.insert(spec.name);
  EXPECT_EQ(owned, expected);
}

TEST(MakeShardPlan, TiedEmbeddingsGiveOtherStagesRowsOfTheEmbedding) {
  Result<ShardPlan> plan = MakeShardPlan(TestConfig(2, true), 2, 1, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  const RankShard& last = plan->ranks[0];
  ASSERT_GT(last.classifier_rows.size(), 0);
  EXPECT_EQ(last.tensors.back(), (TensorSlice{"model.embed_tokens.weight", 0, last.classifier_rows.begin,
                                              last.classifier_rows.end}));
  int embeddings = 0;
  for (const TensorSlice& slice : plan->ranks[1].tensors)
    embeddings += slice.name == "model.embed_tokens.weight";
  EXPECT_EQ(embeddings, 1) << "the first stage reads its rows from its whole embedding";
}

TEST(MakeShardPlan, MoreStagesThanLayers) {
  Result<ShardPlan> plan = MakeShardPlan(TestConfig(5, false), 7, 1, std::nullopt);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message, "--pp 7 exceeds the 5 layers of the model");
}

TEST(MakeShardPlan, ExplicitLayersNotSummingToTheModel) {
  const ModelConfig config = TestConfig(5, false);
  Result<ShardPlan> plan = MakeShardPlan(config, 2, 1, std::vector<int64_t>{2, 2});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message, "--layers sums to 4 but the model has 5 layers");
  EXPECT_FALSE(MakeShardPlan(config, 2, 1, std::vector<int64_t>{5, 0}));
  EXPECT_FALSE(MakeShardPlan(config, 3, 1, std::vector<int64_t>{2, 3}));
}

TEST(MakeShardPlan, TensorParallelDegreeAboveTheHeadCount) {
  const ModelConfig config = TestConfig(2, false);
  Result<ShardPlan> plan = MakeShardPlan(config, 1, 5, std::nullopt);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message, "--tp 5 exceeds the 4 attention heads of the model");
  EXPECT_FALSE(MakeShardPlan(config, 0, 1, std::nullopt));
  EXPECT_FALSE(MakeShardPlan(config, 1, 0, std::nullopt));
}

TEST(MakeShardPlan, EachExpertsHiddenUnitsAreSplitLikeTheMlpsAndTheRouterIsWhole) {
  ModelConfig config = TestMixtureConfig("MixtralForCausalLM", 3, 2);
  Result<ShardPlan> plan = MakeShardPlan(config, 1, 3, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  for (int t = 0; t < 3; ++t) {
    const RowRange units = EvenPart(40, 3, t);
    std::map<std::string, TensorSlice> by_name;
    for (const TensorSlice& slice : plan->ranks[static_cast<size_t>(t)].tensors) by_name[slice.name] = slice;
    EXPECT_EQ(by_name.at(LayerTensorName(1, RouterSuffix(config))).split_dim, -1);
    for (int64_t e = 0; e < 3; ++e) {
      EXPECT_EQ(by_name.at(LayerTensorName(1, ExpertSuffix(config, e, ExpertMatrix::kGate))),
                (TensorSlice{LayerTensorName(1, ExpertSuffix(config, e, ExpertMatrix::kGate)), 0, units.begin,
                             units.end}));
      EXPECT_EQ(by_name.at(LayerTensorName(1, ExpertSuffix(config, e, ExpertMatrix::kDown))),
                (TensorSlice{LayerTensorName(1, ExpertSuffix(config, e, ExpertMatrix::kDown)), 1, units.begin,
                             units.end}));
    }
  }
  config.expert_intermediate_size = 2;
  Result<ShardPlan> too_many = MakeShardPlan(config, 1, 3, std::nullopt);
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().message.find("--tp 3 exceeds the 2 hidden units of an expert"),
            std::string::npos)
      << too_many.error().message;
}

TEST(MakeShardPlan, ExpertParallelRanksHoldWholeExpertsUnevenlyAndOnlyThose) {
  ModelConfig config = TestMixtureConfig("Qwen3MoeForCausalLM", 128, 8);
  Result<ShardPlan> plan = MakeShardPlan(config, 2, 3, std::nullopt, /*expert_parallel=*/true);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->expert_parallel);
  const RowRange expected[] = {{0, 43}, {43, 86}, {86, 128}};
  for (const RankShard& shard : plan->ranks) {
    const RowRange run = expected[shard.tp_index];
    ASSERT_EQ(shard.experts.size(), 1u);
    EXPECT_EQ(shard.ExpertsOf(shard.layers.begin).size(), static_cast<size_t>(run.size()));
    EXPECT_EQ(shard.ExpertsOf(shard.layers.begin).front(), run.begin);
    EXPECT_EQ(ExpertsText(shard),
              "experts [" + std::to_string(run.begin) + ", " + std::to_string(run.end) + ")");
    EXPECT_EQ(shard.heads, EvenPart(config.num_attention_heads, 3, shard.tp_index));
    std::map<std::string, TensorSlice> by_name;
    for (const TensorSlice& slice : shard.tensors) by_name[slice.name] = slice;
    const int64_t layer = shard.layers.begin;
    EXPECT_EQ(by_name.at(LayerTensorName(layer, RouterSuffix(config))).split_dim, -1);
    for (int64_t e = 0; e < 128; ++e) {
      for (ExpertMatrix matrix : {ExpertMatrix::kGate, ExpertMatrix::kUp, ExpertMatrix::kDown}) {
        const std::string name = LayerTensorName(layer, ExpertSuffix(config, e, matrix));
        const bool held = e >= run.begin && e < run.end;
        ASSERT_EQ(by_name.contains(name), held) << "rank " << shard.rank << " " << name;
        if (held) {
          EXPECT_EQ(by_name.at(name).split_dim, -1) << name;
        }
      }
    }
  }
  Result<ShardPlan> tensor_parallel = MakeShardPlan(config, 1, 3, std::nullopt);
  ASSERT_TRUE(tensor_parallel);
  EXPECT_EQ(tensor_parallel->ranks[1].ExpertsOf(0).size(), 128u);
}

// A placement by load: per layer, any set of experts per rank; the tensors
// follow it, and the plan gives back the placement it was made from.
TEST(MakeShardPlan, PlacedExpertsFollowThePlacementLayerByLayer) {
  ModelConfig config = TestMixtureConfig("Qwen3MoeForCausalLM", 4, 2);
  const ExpertPlacement placement{.owner = {{1, 0, 0, 1}, {0, 1, 1, 1}}};
  Result<ShardPlan> plan = MakeShardPlan(config, 1, 2, std::nullopt, /*expert_parallel=*/true, placement);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->ranks[0].experts, (std::vector<std::vector<int32_t>>{{1, 2}, {0}}));
  EXPECT_EQ(plan->ranks[1].experts, (std::vector<std::vector<int32_t>>{{0, 3}, {1, 2, 3}}));
  EXPECT_EQ(ExpertsText(plan->ranks[1]), "experts placed per layer, 2-3 per layer");
  EXPECT_EQ(plan->Placement(2, 4), placement);
  std::set<std::string> names;
  for (const TensorSlice& slice : plan->ranks[0].tensors) names.insert(slice.name);
  EXPECT_TRUE(names.contains(LayerTensorName(0, ExpertSuffix(config, 2, ExpertMatrix::kDown))));
  EXPECT_FALSE(names.contains(LayerTensorName(0, ExpertSuffix(config, 3, ExpertMatrix::kDown))));
  EXPECT_TRUE(names.contains(LayerTensorName(1, ExpertSuffix(config, 0, ExpertMatrix::kUp))));
  EXPECT_FALSE(names.contains(LayerTensorName(1, ExpertSuffix(config, 1, ExpertMatrix::kUp))));

  Result<ShardPlan> idle =
      MakeShardPlan(config, 1, 2, std::nullopt, true, ExpertPlacement{.owner = {{1, 1, 1, 1}, {0, 1, 1, 1}}});
  ASSERT_FALSE(idle);
  EXPECT_EQ(idle.error().message, "the expert placement's layer 0 gives rank index 0 no expert");
  Result<ShardPlan> outside =
      MakeShardPlan(config, 1, 2, std::nullopt, true, ExpertPlacement{.owner = {{0, 1, 2, 1}, {0, 1, 1, 1}}});
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().message,
            "the expert placement's layer 0 puts expert 2 on rank index 2, outside the stage's 2");
  Result<ShardPlan> short_layers =
      MakeShardPlan(config, 1, 2, std::nullopt, true, ExpertPlacement{.owner = {{0, 1, 0, 1}}});
  ASSERT_FALSE(short_layers);
  EXPECT_EQ(short_layers.error().message, "the expert placement has 1 layers but the model has 2");
  Result<ShardPlan> not_ep = MakeShardPlan(config, 1, 2, std::nullopt, false, placement);
  ASSERT_FALSE(not_ep);
  EXPECT_EQ(not_ep.error().message, "an expert placement needs expert parallelism (--ep), not --tp 2");
}

TEST(MakeShardPlan, CopiesJoinTheRanksExpertsAndTheirTensorsAndRoundTrip) {
  ModelConfig config = TestMixtureConfig("Qwen3MoeForCausalLM", 4, 2);
  Result<ExpertPlacement> placement = AddExpertReplicas(2, ContiguousExperts(config, 2), 1);
  ASSERT_TRUE(placement) << placement.error().message;
  Result<ShardPlan> plan = MakeShardPlan(config, 1, 2, std::nullopt, /*expert_parallel=*/true, *placement);
  ASSERT_TRUE(plan) << plan.error().message;
  // Rank 0 owns 0-1 and copies 2; rank 1 owns 2-3 and copies 0.
  EXPECT_EQ(plan->ranks[0].experts, (std::vector<std::vector<int32_t>>{{0, 1, 2}, {0, 1, 2}}));
  EXPECT_EQ(plan->ranks[1].experts, (std::vector<std::vector<int32_t>>{{0, 2, 3}, {0, 2, 3}}));
  const std::vector<std::vector<int32_t>> holders = {{0, 1}, {0}, {0, 1}, {1}};
  for (const RankShard& shard : plan->ranks) {
    EXPECT_EQ(shard.expert_holders, (std::vector<std::vector<std::vector<int32_t>>>{holders, holders}));
  }
  std::set<std::string> names;
  for (const TensorSlice& slice : plan->ranks[1].tensors) names.insert(slice.name);
  EXPECT_TRUE(names.contains(LayerTensorName(1, ExpertSuffix(config, 0, ExpertMatrix::kGate))));
  EXPECT_FALSE(names.contains(LayerTensorName(1, ExpertSuffix(config, 1, ExpertMatrix::kGate))));
  // What a manifest's reader rebuilds: a placement (each expert's lowest
  // holder its owner, the others copies) of the same plan, and the same
  // holders from the ranks' lists.
  const ExpertPlacement rebuilt = plan->Placement(2, 4);
  EXPECT_EQ(rebuilt.owner, (std::vector<std::vector<int>>{{0, 0, 0, 1}, {0, 0, 0, 1}}));
  Result<ShardPlan> again = MakeShardPlan(config, 1, 2, std::nullopt, true, rebuilt);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *plan);
  ShardPlan read = *plan;
  for (RankShard& shard : read.ranks) shard.expert_holders.clear();
  read.SetExpertHolders(4);
  EXPECT_EQ(read, *plan);
  // Without copies no holders are kept.
  Result<ShardPlan> plain = MakeShardPlan(config, 1, 2, std::nullopt, true);
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->ranks[0].expert_holders.empty());
  EXPECT_TRUE(plain->Placement(2, 4).copies.empty());
}

TEST(MakeShardPlan, ExpertParallelBeyondTheExpertsOrOnADenseModel) {
  ModelConfig config = TestMixtureConfig("MixtralForCausalLM", 3, 2);
  Result<ShardPlan> too_many = MakeShardPlan(config, 1, 4, std::nullopt, /*expert_parallel=*/true);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().message, "--ep 4 exceeds the 3 experts of the model");
  Result<ShardPlan> dense = MakeShardPlan(TestConfig(2, false), 1, 2, std::nullopt, /*expert_parallel=*/true);
  ASSERT_FALSE(dense);
  EXPECT_EQ(dense.error().message, "--ep 2 needs a mixture of experts; the model is dense (use --tp)");
}

}  // namespace
}  // namespace inferno
