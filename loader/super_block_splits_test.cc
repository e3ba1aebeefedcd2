#include "loader/super_block_splits.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/model_config.h"

namespace inferno {
namespace {

ModelConfig Config(int64_t intermediate_size) {
  ModelConfig config;
  config.hidden_size = 512;
  config.intermediate_size = intermediate_size;
  config.num_hidden_layers = 1;
  config.num_attention_heads = 4;  // head_dim 128
  config.num_key_value_heads = 4;
  config.vocab_size = 16;
  config.max_position_embeddings = 32;
  return config;
}

// The tensors the plan splits by columns (o_proj, down_proj), all of
// `dtype`, with their shapes.
std::vector<TensorInfo> ColumnSplitTensors(const ShardPlan& plan, const ModelConfig& config, DType dtype) {
  std::vector<TensorInfo> tensors;
  for (const TensorSlice& slice : plan.ranks[0].tensors) {
    if (slice.split_dim != 1) continue;
    const bool down = slice.name.find("down_proj") != std::string::npos;
    tensors.push_back({slice.name, dtype, {config.hidden_size, down ? config.intermediate_size : 512}});
  }
  return tensors;
}

TEST(SuperBlockSplits, AHiddenShareOfPartialBlocksIsRefusedNamingTensorAndTp) {
  const ModelConfig config = Config(1280);  // 5 blocks: 640 columns per rank of 2
  const ShardPlan plan = MakeShardPlan(config, 1, 2, std::nullopt).value();
  const std::vector<TensorInfo> tensors = ColumnSplitTensors(plan, config, DType::kQ4_K);
  ASSERT_EQ(tensors.size(), 2u);
  const Status status = CheckSuperBlocksStayWhole(plan, tensors);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(
      status.error().message.find("--tp 2 cuts the super-blocks of 'model.layers.0.mlp.down_proj.weight' "
                                  "(Q4_K, 5 blocks of 256 columns): tensor-parallel rank 0 would hold "
                                  "columns [0, 640)"),
      std::string::npos)
      << status.error().message;
}

TEST(SuperBlockSplits, WholeBlockSharesPass) {
  const ModelConfig config = Config(1024);
  for (int tp : {1, 2}) {
    const ShardPlan plan = MakeShardPlan(config, 1, tp, std::nullopt).value();
    EXPECT_TRUE(CheckSuperBlocksStayWhole(plan, ColumnSplitTensors(plan, config, DType::kQ6_K)).ok())
        << "--tp " << tp;
  }
}

TEST(SuperBlockSplits, OneHeadOf128ColumnsPerRankCutsOProj) {
  const ModelConfig config = Config(1024);
  const ShardPlan plan = MakeShardPlan(config, 1, 4, std::nullopt).value();
  const Status status = CheckSuperBlocksStayWhole(plan, ColumnSplitTensors(plan, config, DType::kQ6_K));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("'model.layers.0.self_attn.o_proj.weight' (Q6_K, 2 blocks"),
            std::string::npos)
      << status.error().message;
}

TEST(SuperBlockSplits, BlocksOf32MayBeCutAndAreWidenedOnLoad) {
  const ModelConfig config = Config(1280);
  const ShardPlan plan = MakeShardPlan(config, 1, 2, std::nullopt).value();
  EXPECT_TRUE(CheckSuperBlocksStayWhole(plan, ColumnSplitTensors(plan, config, DType::kQ5_0)).ok());
}

}  // namespace
}  // namespace inferno
