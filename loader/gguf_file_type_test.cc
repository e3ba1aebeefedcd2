#include "loader/gguf_file_type.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

DType TypeOf(std::string_view file_type, const std::string& name, std::vector<int64_t> shape,
             int64_t layers = 8, bool has_output = true, int64_t experts = 0) {
  return GgufTensorType(*ParseGgufFileType(file_type), name, shape, layers, experts, has_output);
}

TEST(ParseGgufFileType, RoundTripsEveryNameAndRejectsOthers) {
  EXPECT_EQ(GgufFileTypeNames(),
            "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs, "
            "q4_k_m, q5_k_m");
  for (std::string_view name : {"f32", "q8_0", "q6_k", "iq4_xs", "q4_k_m", "q5_k_m"}) {
    const std::optional<GgufFileType> parsed = ParseGgufFileType(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(GgufFileTypeName(*parsed), name);
  }
  EXPECT_EQ(ParseGgufFileType("Q4_K_M"), (GgufFileType{DType::kQ4_K, GgufFileType::Mix::kQ4_K_M}));
  EXPECT_FALSE(ParseGgufFileType("q4_k_s").has_value());
  EXPECT_FALSE(ParseGgufFileType("").has_value());
}

TEST(LlamaFtype, MatchesLlamaCppsEnum) {
  EXPECT_EQ(LlamaFtype(*ParseGgufFileType("f32")), 0u);
  EXPECT_EQ(LlamaFtype(*ParseGgufFileType("q8_0")), 7u);
  EXPECT_EQ(LlamaFtype(*ParseGgufFileType("q4_k_m")), 15u);
  EXPECT_EQ(LlamaFtype(*ParseGgufFileType("q5_k_m")), 17u);
  EXPECT_EQ(LlamaFtype(*ParseGgufFileType("q6_k")), 18u);
}

TEST(GgufTensorType, NormsStayF32AndFloatTypesApplyToEveryMatrix) {
  EXPECT_EQ(TypeOf("q4_k_m", "blk.0.attn_norm.weight", {256}), DType::kF32);
  EXPECT_EQ(TypeOf("bf16", "output.weight", {320, 100}), DType::kBF16);
  EXPECT_EQ(TypeOf("q8_0", "blk.3.ffn_down.weight", {256, 704}), DType::kQ8_0);
}

TEST(GgufTensorType, Q4KMGivesMoreBitsToOutputAndSomeLayersAttnVAndFfnDown) {
  // 8 layers: the first and last eighth (0, 7) and every third after the
  // first eighth (3, 6).
  for (int layer = 0; layer < 8; ++layer) {
    const bool more = layer == 0 || layer == 3 || layer == 6 || layer == 7;
    const std::string prefix = "blk." + std::to_string(layer) + ".";
    EXPECT_EQ(TypeOf("q4_k_m", prefix + "attn_v.weight", {256, 512}), more ? DType::kQ6_K : DType::kQ4_K)
        << layer;
    EXPECT_EQ(TypeOf("q5_k_m", prefix + "ffn_down.weight", {512, 768}), more ? DType::kQ6_K : DType::kQ5_K)
        << layer;
    EXPECT_EQ(TypeOf("q4_k_m", prefix + "attn_q.weight", {512, 512}), DType::kQ4_K) << layer;
  }
  EXPECT_EQ(TypeOf("q4_k_m", "output.weight", {320, 512}), DType::kQ6_K);
  EXPECT_EQ(TypeOf("q4_k_m", "token_embd.weight", {320, 512}), DType::kQ4_K);
  EXPECT_EQ(TypeOf("q4_k_m", "token_embd.weight", {320, 512}, 8, /*has_output=*/false), DType::kQ6_K);
}

// What llama_model_quantize gives a mixture of experts (seen on qwen3moe toys
// of 4 and 8 experts, 8 layers): the experts' down stack takes ffn_down's
// extra bits; with exactly 8 experts attention's k and v are Q8_0 and its
// output Q5_K.
TEST(GgufTensorType, MixturesGetLlamaCppsExpertRules) {
  for (int layer = 0; layer < 8; ++layer) {
    const bool more = layer == 0 || layer == 3 || layer == 6 || layer == 7;
    const std::string prefix = "blk." + std::to_string(layer) + ".";
    for (int64_t experts : {4, 8}) {
      EXPECT_EQ(TypeOf("q4_k_m", prefix + "ffn_down_exps.weight", {256, 256}, 8, true, experts),
                more ? DType::kQ6_K : DType::kQ4_K)
          << layer;
      EXPECT_EQ(TypeOf("q4_k_m", prefix + "ffn_gate_exps.weight", {256, 256}, 8, true, experts),
                DType::kQ4_K);
    }
    EXPECT_EQ(TypeOf("q4_k_m", prefix + "attn_k.weight", {128, 256}, 8, true, 8), DType::kQ8_0);
    EXPECT_EQ(TypeOf("q5_k_m", prefix + "attn_v.weight", {128, 256}, 8, true, 8), DType::kQ8_0);
    EXPECT_EQ(TypeOf("q4_k_m", prefix + "attn_output.weight", {256, 256}, 8, true, 8), DType::kQ5_K);
    EXPECT_EQ(TypeOf("q4_k_m", prefix + "attn_k.weight", {128, 256}, 8, true, 4), DType::kQ4_K);
    EXPECT_EQ(TypeOf("q4_k_m", prefix + "attn_output.weight", {256, 256}, 8, true, 4), DType::kQ4_K);
    EXPECT_EQ(TypeOf("q4_k", prefix + "attn_k.weight", {128, 256}, 8, true, 8), DType::kQ4_K);  // pure
  }
}

TEST(GgufTensorType, RowsNotWholeSuperBlocksFallBackAsLlamaCppDoes) {
  EXPECT_EQ(TypeOf("q4_k_m", "blk.1.ffn_down.weight", {256, 352}), DType::kQ5_0);
  EXPECT_EQ(TypeOf("q4_k_m", "blk.0.ffn_down.weight", {256, 352}), DType::kQ8_0);  // Q6_K's fallback
  EXPECT_EQ(TypeOf("q5_k_m", "blk.1.ffn_down.weight", {256, 352}), DType::kQ5_1);
  EXPECT_EQ(TypeOf("q4_k_m", "output.weight", {320, 288}), DType::kQ8_0);
  EXPECT_EQ(TypeOf("q6_k", "blk.1.ffn_down.weight", {256, 352}), DType::kQ8_0);
  EXPECT_EQ(TypeOf("q3_k", "blk.1.attn_q.weight", {96, 96}), DType::kQ4_0);
  EXPECT_EQ(TypeOf("iq4_xs", "blk.1.attn_q.weight", {96, 96}), DType::kIQ4_NL);
  EXPECT_EQ(TypeOf("q4_k_m", "blk.1.ffn_down.weight", {256, 172}), DType::kF16);
  EXPECT_EQ(TypeOf("q8_0", "blk.1.ffn_down.weight", {256, 172}), DType::kF16);
}

}  // namespace
}  // namespace inferno
