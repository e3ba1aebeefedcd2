#include "model/llama_layout.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

ModelConfig Config(bool tied) {
  ModelConfig c;
  c.hidden_size = 16;
  c.intermediate_size = 40;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.vocab_size = 24;
  c.max_position_embeddings = 32;
  c.tie_word_embeddings = tied;
  return c;
}

std::vector<TensorInfo> InfosOf(const std::vector<TensorSpec>& specs) {
  std::vector<TensorInfo> infos;
  for (const TensorSpec& s : specs) infos.push_back({s.name, DType::kF32, s.shape});
  return infos;
}

TEST(LayerIndexOf, ParsesLayerNamesOnly) {
  EXPECT_EQ(LayerIndexOf("model.layers.12.mlp.up_proj.weight"), 12);
  EXPECT_EQ(LayerTensorSuffix("model.layers.12.mlp.up_proj.weight"), "mlp.up_proj.weight");
  EXPECT_FALSE(LayerIndexOf("model.norm.weight"));
  EXPECT_FALSE(LayerIndexOf("model.layers.x.mlp"));
  EXPECT_FALSE(LayerIndexOf("model.layers.3"));
}

TEST(LlamaTensorSpecs, ListsEveryTensorWithGroupedQueryShapes) {
  const std::vector<TensorSpec> specs = LlamaTensorSpecs(Config(false));
  ASSERT_EQ(specs.size(), 1u + 2 * 9 + 2);
  EXPECT_EQ(specs[0].name, "model.embed_tokens.weight");
  EXPECT_EQ(specs[2].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(specs[3].shape, (std::vector<int64_t>{8, 16}));   // k_proj: kv_dim = 2 heads x 4
  EXPECT_EQ(specs[9].shape, (std::vector<int64_t>{16, 40}));  // down_proj
  EXPECT_EQ(specs.back().name, "lm_head.weight");
  EXPECT_EQ(LlamaTensorSpecs(Config(true)).size(), specs.size() - 1);
}

TEST(CheckTensorsMatchConfig, TensorMissingForTheConfig) {
  std::vector<TensorInfo> infos = InfosOf(LlamaTensorSpecs(Config(false)));
  infos.erase(infos.begin() + 5);
  Status s = CheckTensorsMatchConfig(infos, Config(false), "m.safetensors");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            "m.safetensors: tensor 'model.layers.0.self_attn.o_proj.weight' is missing (the config needs "
            "shape [16, 16])");
}

TEST(CheckTensorsMatchConfig, TensorOfWrongShapeForTheConfig) {
  std::vector<TensorInfo> infos = InfosOf(LlamaTensorSpecs(Config(false)));
  infos[3].shape = {16, 16};
  Status s = CheckTensorsMatchConfig(infos, Config(false), "m.safetensors");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            "m.safetensors: tensor 'model.layers.0.self_attn.k_proj.weight' has shape [16, 16] but the "
            "config needs "
            "[8, 16]");
}

TEST(CheckTensorsMatchConfig, RopeTablesAndTiedHeadAreAccepted) {
  std::vector<TensorInfo> infos = InfosOf(LlamaTensorSpecs(Config(true)));
  infos.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", DType::kF32, {2}});
  EXPECT_TRUE(CheckTensorsMatchConfig(infos, Config(true), "m.safetensors"));
  EXPECT_FALSE(CheckTensorsMatchConfig(infos, Config(false), "m.safetensors"));
}

// A Qwen2-style bias in a checkpoint whose config declares none would be
// ignored: refused, naming it; declared (qkv_bias), it is required.
TEST(CheckTensorsMatchConfig, BiasesAreRequiredWhenDeclaredAndRefusedWhenNot) {
  std::vector<TensorInfo> infos = InfosOf(LlamaTensorSpecs(Config(false)));
  infos.push_back({"model.layers.1.self_attn.q_proj.bias", DType::kF32, {16}});
  Status s = CheckTensorsMatchConfig(infos, Config(false), "m.safetensors");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind, ErrorKind::kUnimplemented);
  EXPECT_NE(s.error().message.find("tensor 'model.layers.1.self_attn.q_proj.bias' is not part of"),
            std::string::npos)
      << s.error().message;
  ModelConfig biased = Config(false);
  biased.qkv_bias = true;
  const std::vector<TensorSpec> specs = LlamaTensorSpecs(biased);
  EXPECT_EQ(specs.size(), 1u + 2 * 12 + 2);
  EXPECT_TRUE(CheckTensorsMatchConfig(InfosOf(specs), biased, "m.safetensors"));
  Status missing = CheckTensorsMatchConfig(infos, biased, "m.safetensors");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("'model.layers.0.self_attn.q_proj.bias' is missing"),
            std::string::npos);
}

}  // namespace
}  // namespace inferno

namespace inferno {
namespace {

TEST(LlamaLayout, InterleavedRopeRowPutsEachHeadsPairsSideBySide) {
  // head_dim 4: Hugging Face rows (0, 2) and (1, 3) rotate together; stored
  // interleaved they are rows (0, 1) and (2, 3). Head 1 is offset by 4.
  const int64_t expected[] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int64_t row = 0; row < 8; ++row) EXPECT_EQ(InterleavedRopeRow(row, 4), expected[row]) << row;
}

TEST(LlamaTensorSpecs, SparseLayersHaveARouterAndEachExpertsMatricesInPlaceOfTheMlp) {
  ModelConfig c = Config(false);
  c.architecture = "Qwen3MoeForCausalLM";
  c.num_experts = 3;
  c.num_experts_per_tok = 2;
  c.expert_intermediate_size = 8;
  c.mlp_only_layers = {1};
  ASSERT_TRUE(c.Validate("test").ok());
  const std::vector<TensorSpec> sparse = LayerTensorSpecs(c, 0);
  // 6 attention tensors and norms, the router, 3 experts x 3, q_norm, k_norm.
  ASSERT_EQ(sparse.size(), 6u + 1 + 9 + 2);
  EXPECT_EQ(sparse[6].name, "model.layers.0.mlp.gate.weight");
  EXPECT_EQ(sparse[6].shape, (std::vector<int64_t>{3, 16}));
  EXPECT_EQ(sparse[7].name, "model.layers.0.mlp.experts.0.gate_proj.weight");
  EXPECT_EQ(sparse[7].shape, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(sparse[15].name, "model.layers.0.mlp.experts.2.down_proj.weight");
  EXPECT_EQ(sparse[15].shape, (std::vector<int64_t>{16, 8}));
  const std::vector<TensorSpec> dense = LayerTensorSpecs(c, 1);  // mlp_only_layers
  EXPECT_EQ(dense[6].name, "model.layers.1.mlp.gate_proj.weight");
  EXPECT_EQ(dense[6].shape, (std::vector<int64_t>{40, 16}));
  c.architecture = "MixtralForCausalLM";
  c.mlp_only_layers.clear();
  EXPECT_EQ(LayerTensorName(1, ExpertSuffix(c, 2, ExpertMatrix::kUp)),
            "model.layers.1.block_sparse_moe.experts.2.w3.weight");
  EXPECT_EQ(RouterSuffix(c), "block_sparse_moe.gate.weight");
}

}  // namespace
}  // namespace inferno
