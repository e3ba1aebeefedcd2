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
            "Phi3ForCausalLM");
}

TEST(Architecture, GgufNamesAreLlamaCppsAndOnlyLlamaInterleavesRope) {
  EXPECT_EQ(FindGgufArchitecture("llama")->name, "LlamaForCausalLM");
  EXPECT_EQ(FindGgufArchitecture("qwen3")->name, "Qwen3ForCausalLM");
  EXPECT_EQ(FindGgufArchitecture(""), nullptr);  // Mistral has none of its own
  EXPECT_EQ(FindGgufArchitecture("gemma3")->name, "Gemma3ForCausalLM");
  EXPECT_EQ(FindGgufArchitecture("phi3")->name, "Phi3ForCausalLM");
  EXPECT_EQ(FindGgufArchitecture("gemma2"), nullptr);
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

}  // namespace
}  // namespace inferno
