#include "model/architecture.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(Architecture, FindsEachEntryByItsClassNameOnly) {
  for (const Architecture& architecture : kArchitectures)
    EXPECT_EQ(FindArchitecture(architecture.name), &architecture);
  EXPECT_EQ(FindArchitecture("Gemma2ForCausalLM"), nullptr);
  EXPECT_EQ(FindArchitecture("qwen3"), nullptr);  // a model_type, not a class
  EXPECT_EQ(ArchitectureNames(),
            "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM, "
            "Phi3ForCausalLM, MixtralForCausalLM, Qwen3MoeForCausalLM");
}

TEST(Architecture, GgufNamesAreLlamaCppsAndOnlyLlamaInterleavesRope) {
  EXPECT_EQ(FindGgufArchitecture("llama")->name, "LlamaForCausalLM");
  EXPECT_EQ(FindGgufArchitecture("qwen3")->name, "Qwen3ForCausalLM");
  EXPECT_EQ(FindGgufArchitecture(""), nullptr);  // Mistral has none of its own
  EXPECT_EQ(FindGgufArchitecture("gemma3")->name, "Gemma3ForCausalLM");
  EXPECT_EQ(FindGgufArchitecture("phi3")->name, "Phi3ForCausalLM");
  EXPECT_EQ(FindGgufArchitecture("gemma2"), nullptr);
  EXPECT_EQ(FindGgufArchitecture("llama", /*experts=*/true)->name, "MixtralForCausalLM");
  EXPECT_EQ(FindGgufArchitecture("qwen3moe", /*experts=*/true)->name, "Qwen3MoeForCausalLM");
  EXPECT_EQ(FindGgufArchitecture("qwen3", /*experts=*/true), nullptr);
  for (const Architecture& architecture : kArchitectures)
    EXPECT_EQ(architecture.gguf_interleaved_rope, architecture.gguf_name == "llama") << architecture.name;
}

TEST(Architecture, Qwen3NormsQAndKAndTakesAttentionBiasAsLlamaDoes) {
  const Architecture* qwen3 = FindArchitecture("Qwen3ForCausalLM");
  ASSERT_NE(qwen3, nullptr);
  EXPECT_TRUE(qwen3->qk_norm);
  EXPECT_TRUE(qwen3->attention_bias_field);
  EXPECT_FALSE(qwen3->fixed_qkv_bias);
  EXPECT_FALSE(FindArchitecture("Qwen2ForCausalLM")->qk_norm);
}

TEST(Architecture, GemmaAloneHasGemmaLayoutAndPhi3AloneFusesProjections) {
  for (const Architecture& architecture : kArchitectures) {
    EXPECT_EQ(architecture.gemma_layout, architecture.name == "Gemma3ForCausalLM") << architecture.name;
    EXPECT_EQ(architecture.fused_projections, architecture.name == "Phi3ForCausalLM") << architecture.name;
  }
}

TEST(Architecture, OnlyTheMixtureFamiliesHaveExpertsNamedAsHuggingFaceWritesThem) {
  const Architecture* mixtral = FindArchitecture("MixtralForCausalLM");
  const Architecture* qwen3_moe = FindArchitecture("Qwen3MoeForCausalLM");
  ASSERT_NE(mixtral, nullptr);
  ASSERT_NE(qwen3_moe, nullptr);
  EXPECT_EQ(mixtral->experts.block, "block_sparse_moe");
  EXPECT_EQ(mixtral->experts.gate, "w1");
  EXPECT_EQ(mixtral->experts.up, "w3");
  EXPECT_EQ(mixtral->experts.down, "w2");
  EXPECT_FALSE(mixtral->experts.norm_topk_field);  // Mixtral always renormalises
  EXPECT_EQ(qwen3_moe->experts.block, "mlp");
  EXPECT_TRUE(qwen3_moe->experts.norm_topk_field);
  EXPECT_TRUE(qwen3_moe->experts.dense_layer_fields);
  EXPECT_TRUE(qwen3_moe->qk_norm);
  for (const Architecture& architecture : kArchitectures) {
    const bool mixture = &architecture == mixtral || &architecture == qwen3_moe;
    EXPECT_EQ(architecture.experts.count_field.empty(), !mixture) << architecture.name;
  }
}

}  // namespace
}  // namespace inferno
