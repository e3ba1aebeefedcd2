#include "model/model_config.h"

#include <cmath>

#include <gtest/gtest.h>

namespace inferno {
namespace {

ModelConfig SmallConfig() {
  ModelConfig c;
  c.hidden_size = 64;
  c.intermediate_size = 172;
  c.num_hidden_layers = 5;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.vocab_size = 512;
  c.max_position_embeddings = 512;
  c.rms_norm_eps = 1e-6f;
  c.rope_theta = 500000.0f;
  c.tie_word_embeddings = true;
  return c;
}

TEST(ModelConfigJson, RoundTripsEveryField) {
  const ModelConfig c = SmallConfig();
  Result<ModelConfig> parsed = ParseModelConfigJson(ModelConfigToJson(c), "config.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->hidden_size, 64);
  EXPECT_EQ(parsed->intermediate_size, 172);
  EXPECT_EQ(parsed->num_hidden_layers, 5);
  EXPECT_EQ(parsed->num_attention_heads, 8);
  EXPECT_EQ(parsed->num_key_value_heads, 4);
  EXPECT_EQ(parsed->vocab_size, 512);
  EXPECT_EQ(parsed->max_position_embeddings, 512);
  EXPECT_EQ(parsed->rms_norm_eps, 1e-6f);
  EXPECT_EQ(parsed->rope_theta, 500000.0f);
  EXPECT_TRUE(parsed->tie_word_embeddings);
  EXPECT_EQ(parsed->head_dim(), 8);
  EXPECT_EQ(parsed->kv_dim(), 32);
}

TEST(ModelConfigJson, MissingKvHeadsDefaultsToHeads) {
  Result<ModelConfig> parsed = ParseModelConfigJson(
      R"({"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "vocab_size": 10, "max_position_embeddings": 16})",
      "config.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->num_key_value_heads, 4);
  EXPECT_FALSE(parsed->tie_word_embeddings);
  EXPECT_EQ(parsed->rms_norm_eps, 1e-5f);
}

TEST(ModelConfigJson, InvalidJsonIsAnErrorNamingTheFile) {
  Result<ModelConfig> parsed = ParseModelConfigJson("{\"hidden_size\": ", "m/config.json");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("m/config.json"), std::string::npos);
}

TEST(ModelConfigJson, MissingRequiredFieldIsNamed) {
  Result<ModelConfig> parsed = ParseModelConfigJson(R"({"hidden_size": 32})", "config.json");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("intermediate_size"), std::string::npos);
}

TEST(ModelConfigJson, NonIntegerFieldIsNamedWithItsValue) {
  ModelConfig c = SmallConfig();
  std::string text = ModelConfigToJson(c);
  text.replace(text.find("\"vocab_size\": 512"), 17, "\"vocab_size\": \"big\"");
  Result<ModelConfig> parsed = ParseModelConfigJson(text, "config.json");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("'vocab_size' = \"big\""), std::string::npos)
      << parsed.error().message;
}

TEST(ModelConfigValidate, HeadsNotDividingHiddenSizeFails) {
  ModelConfig c = SmallConfig();
  c.num_attention_heads = 7;
  c.num_key_value_heads = 7;
  Status s = c.Validate("x.bin");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("num_attention_heads = 7"), std::string::npos);
}

TEST(ModelConfigValidate, KvHeadsNotDividingHeadsFails) {
  ModelConfig c = SmallConfig();
  c.num_key_value_heads = 3;
  EXPECT_FALSE(c.Validate("x.bin"));
}

TEST(ModelConfigValidate, OddHeadDimFails) {
  ModelConfig c = SmallConfig();
  c.hidden_size = 24;  // 8 heads of 3
  Status s = c.Validate("x.bin");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("head_dim = 3"), std::string::npos);
}

TEST(ModelConfigValidate, NonPositiveLayerCountFails) {
  ModelConfig c = SmallConfig();
  c.num_hidden_layers = 0;
  EXPECT_FALSE(c.Validate("x.bin"));
  EXPECT_TRUE(SmallConfig().Validate("x.bin"));
}

}  // namespace
}  // namespace inferno

namespace inferno {
namespace {

// config.json of a small model of `architecture` plus `extra` fields.
std::string ConfigJson(const std::string& architecture, const std::string& extra) {
  return R"({"architectures": [")" + architecture +
         R"("], "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "vocab_size": 10, "max_position_embeddings": 64)" +
         extra + "}";
}

TEST(ModelConfigJson, NewFieldsRoundTrip) {
  ModelConfig c = SmallConfig();
  c.architecture = "Qwen2ForCausalLM";
  c.explicit_head_dim = 16;
  c.qkv_bias = true;
  c.sliding_window = 64;
  c.layer_slides = {false, false, true, true, true};
  c.rope_scaling = {.type = RopeScaling::Type::kLlama3,
                    .factor = 8.0f,
                    .low_freq_factor = 1.0f,
                    .high_freq_factor = 4.0f,
                    .original_max_position_embeddings = 32};
  c.eos_token_ids = {2, 151645};
  Result<ModelConfig> parsed = ParseModelConfigJson(ModelConfigToJson(c), "config.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(parsed->head_dim(), 16);
  EXPECT_EQ(parsed->q_dim(), 128);
  EXPECT_TRUE(parsed->qkv_bias);
  EXPECT_FALSE(parsed->o_proj_bias);
  EXPECT_EQ(parsed->sliding_window, 64);
  EXPECT_EQ(parsed->layer_slides, c.layer_slides);
  EXPECT_EQ(parsed->rope_scaling, c.rope_scaling);
  EXPECT_EQ(parsed->eos_token_ids, c.eos_token_ids);
}

TEST(ModelConfigJson, UnknownArchitectureIsRefusedNamingIt) {
  Result<ModelConfig> parsed = ParseModelConfigJson(ConfigJson("GemmaForCausalLM", ""), "m/config.json");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().kind, ErrorKind::kUnimplemented);
  EXPECT_NE(parsed.error().message.find("architecture 'GemmaForCausalLM' is not supported"),
            std::string::npos)
      << parsed.error().message;
}

TEST(ModelConfigJson, UnknownFieldIsRefusedAndFieldsWithoutEffectAreNot) {
  Result<ModelConfig> unknown =
      ParseModelConfigJson(ConfigJson("LlamaForCausalLM", R"(, "quantization_config": {})"), "config.json");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(
      unknown.error().message,
      "config.json: field 'quantization_config' is not supported (inferno does not know its effect on the "
      "model)");
  Result<ModelConfig> harmless = ParseModelConfigJson(
      ConfigJson("LlamaForCausalLM",
                 R"(, "torch_dtype": "bfloat16", "transformers_version": "4.40", "bos_token_id": 1,
                    "attention_dropout": 0.0, "use_cache": true, "hidden_act": "silu", "mlp_bias": false)"),
      "config.json");
  EXPECT_TRUE(harmless) << harmless.error().message;
}

TEST(ModelConfigJson, SettingsThatChangeTheArithmeticAreImplementedOrRefused) {
  const std::pair<std::string, std::string> refused[] = {
      {R"(, "hidden_act": "gelu")", "hidden_act \"gelu\" is not supported"},
      {R"(, "mlp_bias": true)", "mlp_bias = true is not supported"},
      {R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0})", "type 'yarn' is not supported"},
      {R"(, "rope_scaling": {"rope_type": "linear", "factor": 2.0, "beta": 1})",
       "field 'beta' is not supported"},
      {R"(, "model_type": "mistral")", "does not match architecture 'LlamaForCausalLM'"},
  };
  for (const auto& [extra, message] : refused) {
    Result<ModelConfig> parsed = ParseModelConfigJson(ConfigJson("LlamaForCausalLM", extra), "config.json");
    ASSERT_FALSE(parsed) << extra;
    EXPECT_NE(parsed.error().message.find(message), std::string::npos) << parsed.error().message;
  }
  Result<ModelConfig> biased =
      ParseModelConfigJson(ConfigJson("LlamaForCausalLM", R"(, "attention_bias": true)"), "config.json");
  ASSERT_TRUE(biased) << biased.error().message;
  EXPECT_TRUE(biased->qkv_bias && biased->o_proj_bias);
  Result<ModelConfig> qwen = ParseModelConfigJson(
      ConfigJson("Qwen2ForCausalLM", R"(, "sliding_window": 32, "use_sliding_window": false)"),
      "config.json");
  ASSERT_TRUE(qwen) << qwen.error().message;
  EXPECT_TRUE(qwen->qkv_bias);
  EXPECT_EQ(qwen->sliding_window, 0) << "Qwen2 slides only with use_sliding_window";
}

TEST(ModelConfigJson, EachFamilySlidesTheLayersItsConfigClassDoes) {
  Result<ModelConfig> mistral =
      ParseModelConfigJson(ConfigJson("MistralForCausalLM", R"(, "sliding_window": 16)"), "config.json");
  ASSERT_TRUE(mistral) << mistral.error().message;
  EXPECT_EQ(mistral->sliding_window, 16);
  EXPECT_EQ(mistral->layer_slides, (std::vector<bool>{true, true}));
  EXPECT_TRUE(mistral->CheckContextFits(64).ok()) << "a window bounds attention, not the context";
  EXPECT_FALSE(mistral->CheckContextFits(65).ok()) << "beyond max_position_embeddings";
  Result<ModelConfig> qwen = ParseModelConfigJson(
      ConfigJson("Qwen2ForCausalLM",
                 R"(, "sliding_window": 16, "use_sliding_window": true, "max_window_layers": 1)"),
      "config.json");
  ASSERT_TRUE(qwen) << qwen.error().message;
  EXPECT_EQ(qwen->layer_slides, (std::vector<bool>{false, true})) << "from max_window_layers on";
  Result<ModelConfig> none = ParseModelConfigJson(
      ConfigJson("Qwen2ForCausalLM", R"(, "sliding_window": 16, "use_sliding_window": true)"), "config.json");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->sliding_window, 0) << "max_window_layers defaults to 28: no layer of 2 slides";
  Result<ModelConfig> gemma = ParseModelConfigJson(
      ConfigJson("Gemma3ForCausalLM", R"(, "sliding_window": 8, "sliding_window_pattern": 2)"),
      "config.json");
  ASSERT_TRUE(gemma) << gemma.error().message;
  EXPECT_EQ(gemma->layer_slides, (std::vector<bool>{true, false})) << "every pattern-th layer is global";
  Result<ModelConfig> typed = ParseModelConfigJson(
      ConfigJson("Gemma3ForCausalLM",
                 R"(, "sliding_window": 8, "layer_types": ["full_attention", "sliding_attention"])"),
      "config.json");
  ASSERT_TRUE(typed) << typed.error().message;
  EXPECT_EQ(typed->layer_slides, (std::vector<bool>{false, true})) << "layer_types overrides the pattern";
}

// gemma-3-1b-it's config.json as published (Hugging Face, google/gemma-3-1b-it).
constexpr char kGemma3Config[] = R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid",
  "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
  "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
  "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
  "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true,
  "vocab_size": 262144})";

TEST(ModelConfigJson, Gemma3AsPublishedHasLocalAndGlobalLayersAndItsOwnNorms) {
  Result<ModelConfig> gemma = ParseModelConfigJson(kGemma3Config, "config.json");
  ASSERT_TRUE(gemma) << gemma.error().message;
  EXPECT_EQ(gemma->activation, Activation::kGeluTanh);
  EXPECT_EQ(gemma->norm_weight_offset, 1.0f);
  EXPECT_TRUE(gemma->scales_embedding());
  EXPECT_TRUE(gemma->post_norms());
  EXPECT_TRUE(gemma->qk_norm());
  EXPECT_TRUE(gemma->tie_word_embeddings) << "Gemma3TextConfig's default";
  EXPECT_EQ(gemma->sliding_window, 512);
  EXPECT_EQ(gemma->local_rope_theta, 10000.0f);
  EXPECT_EQ(gemma->rope_theta, 1e6f);
  EXPECT_EQ(gemma->query_pre_attn_scalar, 256.0f);
  EXPECT_EQ(gemma->final_logit_softcapping, 0.0f);
  for (int64_t layer = 0; layer < 26; ++layer)
    EXPECT_EQ(gemma->LayerSlides(layer), (layer + 1) % 6 != 0) << layer;
  Result<ModelConfig> again = ParseModelConfigJson(ModelConfigToJson(*gemma), "again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->layer_slides, gemma->layer_slides);
  EXPECT_EQ(again->norm_weight_offset, 1.0f);
  EXPECT_EQ(ModelConfigToJson(*again), ModelConfigToJson(*gemma));
}

TEST(ModelConfigJson, GemmaFieldsAreRefusedElsewhereAndUnsupportedOnesNamed) {
  Result<ModelConfig> llama =
      ParseModelConfigJson(ConfigJson("LlamaForCausalLM", R"(, "query_pre_attn_scalar": 8)"), "config.json");
  ASSERT_FALSE(llama);
  EXPECT_NE(llama.error().message.find("query_pre_attn_scalar"), std::string::npos) << llama.error().message;
  Result<ModelConfig> capped = ParseModelConfigJson(
      ConfigJson("Gemma3ForCausalLM", R"(, "attn_logit_softcapping": 50.0)"), "config.json");
  ASSERT_FALSE(capped);
  EXPECT_NE(capped.error().message.find("attn_logit_softcapping"), std::string::npos);
  Result<ModelConfig> partial = ParseModelConfigJson(
      ConfigJson("Phi3ForCausalLM", R"(, "partial_rotary_factor": 0.75)"), "config.json");
  ASSERT_FALSE(partial);
  EXPECT_NE(partial.error().message.find("partial_rotary_factor"), std::string::npos);
  Result<ModelConfig> yarn = ParseModelConfigJson(
      ConfigJson("Phi3ForCausalLM", R"(, "rope_scaling": {"type": "yarn", "factor": 4.0})"), "config.json");
  ASSERT_FALSE(yarn);
  EXPECT_EQ(yarn.error().kind, ErrorKind::kUnimplemented);
  EXPECT_NE(yarn.error().message.find("yarn"), std::string::npos) << yarn.error().message;
  Result<ModelConfig> offset = ParseModelConfigJson(
      ConfigJson("Gemma3ForCausalLM", R"(, "inferno_norm_weight_offset": 0)"), "config.json");
  ASSERT_TRUE(offset) << offset.error().message;
  EXPECT_EQ(offset->norm_weight_offset, 0.0f) << "a Gemma GGUF's norms, sharded";
  EXPECT_NE(ModelConfigToJson(*offset).find("inferno_norm_weight_offset"), std::string::npos);
}

// Phi-3-mini-4k-instruct's config.json as published (auto_map shortened).
constexpr char kPhi3Config[] = R"({
  "_name_or_path": "Phi-3-mini-4k-instruct", "architectures": ["Phi3ForCausalLM"],
  "attention_dropout": 0.0, "auto_map": {"AutoConfig": "configuration_phi3.Phi3Config"},
  "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 32000, "hidden_act": "silu",
  "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192,
  "max_position_embeddings": 4096, "model_type": "phi3", "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
  "pad_token_id": 32000, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "rope_theta": 10000.0, "sliding_window": 2047, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.2", "use_cache": true,
  "attention_bias": false, "vocab_size": 32064})";

TEST(ModelConfigJson, Phi3LongRopeTakesTransformersAttentionFactorAndRefusesLongContexts) {
  std::string factors = "[";
  for (int i = 0; i < 4; ++i) factors += std::string(i ? ", " : "") + "1.5";
  factors += "]";
  Result<ModelConfig> phi3 = ParseModelConfigJson(
      ConfigJson("Phi3ForCausalLM", R"(, "original_max_position_embeddings": 16,
                 "rope_scaling": {"type": "longrope", "short_factor": )" +
                                        factors + R"(, "long_factor": )" + factors + "}"),
      "config.json");
  ASSERT_TRUE(phi3) << phi3.error().message;
  const RopeScaling& longrope = phi3->rope_scaling;
  EXPECT_EQ(longrope.type, RopeScaling::Type::kLongRope);
  EXPECT_EQ(longrope.original_max_position_embeddings, 16);
  // max_position_embeddings 64 over 16: sqrt(1 + ln 4 / ln 16) = sqrt(1.5).
  EXPECT_FLOAT_EQ(longrope.attention_factor, std::sqrt(1.5f));
  // Past the original context the long factors apply (engine/rope.h), up
  // to max_position_embeddings.
  EXPECT_TRUE(phi3->CheckContextFits(17).ok());
  EXPECT_TRUE(phi3->CheckContextFits(64).ok());
  EXPECT_FALSE(phi3->CheckContextFits(65).ok());
  Result<ModelConfig> again = ParseModelConfigJson(ModelConfigToJson(*phi3), "again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->rope_scaling, phi3->rope_scaling);
  Result<ModelConfig> short_list = ParseModelConfigJson(
      ConfigJson("Phi3ForCausalLM",
                 R"(, "rope_scaling": {"type": "longrope", "short_factor": [1.0], "long_factor": [1.0]})"),
      "config.json");
  ASSERT_FALSE(short_list);
  EXPECT_NE(short_list.error().message.find("head_dim / 2 = 4"), std::string::npos)
      << short_list.error().message;
}

TEST(ModelConfigJson, Phi3AsPublishedSlidesEveryLayerAndFusesItsProjections) {
  Result<ModelConfig> phi3 = ParseModelConfigJson(kPhi3Config, "config.json");
  ASSERT_TRUE(phi3) << phi3.error().message;
  EXPECT_TRUE(phi3->family().fused_projections);
  EXPECT_EQ(phi3->sliding_window, 2047);
  EXPECT_EQ(phi3->layer_slides, std::vector<bool>(32, true));
  EXPECT_EQ(phi3->activation, Activation::kSilu);
  EXPECT_EQ(phi3->norm_weight_offset, 0.0f);
}

// Qwen3-0.6B's config.json as published (Hugging Face, Qwen/Qwen3-0.6B).
constexpr char kQwen3Config[] = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})";

TEST(ModelConfigJson, Qwen3AsPublishedNormsQAndKWithItsOwnHeadDim) {
  Result<ModelConfig> qwen3 = ParseModelConfigJson(kQwen3Config, "config.json");
  ASSERT_TRUE(qwen3) << qwen3.error().message;
  EXPECT_TRUE(qwen3->qk_norm());
  EXPECT_EQ(qwen3->head_dim(), 128);  // not 1024 / 16
  EXPECT_FALSE(qwen3->qkv_bias);
  EXPECT_EQ(qwen3->sliding_window, 0);
  EXPECT_TRUE(qwen3->tie_word_embeddings);
  EXPECT_EQ(qwen3->eos_token_ids, (std::vector<int64_t>{151645}));
  Result<ModelConfig> again = ParseModelConfigJson(ModelConfigToJson(*qwen3), "again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->qk_norm());
}

TEST(ModelConfigJson, LayerTypesMustAllAttendFullyWithoutAWindow) {
  const std::string full =
      ConfigJson("Qwen3ForCausalLM", R"(, "layer_types": ["full_attention", "full_attention"])");
  ASSERT_TRUE(ParseModelConfigJson(full, "config.json")) << full;
  Result<ModelConfig> sliding = ParseModelConfigJson(
      ConfigJson("Qwen3ForCausalLM", R"(, "layer_types": ["sliding_attention", "full_attention"])"),
      "config.json");
  ASSERT_FALSE(sliding);
  EXPECT_EQ(sliding.error().kind, ErrorKind::kUnimplemented);
  EXPECT_NE(sliding.error().message.find("layer_types"), std::string::npos) << sliding.error().message;
}

TEST(GenerationConfig, EosIdsJoinThoseOfConfigJsonOnce) {
  Result<ModelConfig> config =
      ParseModelConfigJson(ConfigJson("LlamaForCausalLM", R"(, "eos_token_id": 7)"), "config.json");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_TRUE(MergeGenerationConfigJson(R"({"eos_token_id": [7, 8, 9], "temperature": 0.6})",
                                        "generation_config.json", *config));
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{7, 8, 9}));
  Status bad = MergeGenerationConfigJson(R"({"eos_token_id": "x"})", "generation_config.json", *config);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("generation_config.json: field 'eos_token_id'"), std::string::npos);
}

// A Qwen3-30B-A3B config.json as Hugging Face publishes it, cut to 4 layers.
constexpr char kQwen3MoeJson[] = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
  "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [], "model_type": "qwen3_moe",
  "moe_intermediate_size": 768, "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
  "num_experts_per_tok": 8, "num_hidden_layers": 4, "num_key_value_heads": 4, "output_router_logits": false,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

TEST(ModelConfigJson, Qwen3MoeReadsItsExpertsAndDenseLayers) {
  Result<ModelConfig> parsed = ParseModelConfigJson(kQwen3MoeJson, "config.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->num_experts, 128);
  EXPECT_EQ(parsed->num_experts_per_tok, 8);
  EXPECT_EQ(parsed->expert_intermediate_size, 768);
  EXPECT_EQ(parsed->intermediate_size, 6144);
  EXPECT_TRUE(parsed->norm_topk_prob);
  EXPECT_TRUE(parsed->qk_norm());
  for (int64_t layer = 0; layer < 4; ++layer) EXPECT_TRUE(parsed->IsSparseLayer(layer));
  parsed->decoder_sparse_step = 2;
  parsed->mlp_only_layers = {3};
  EXPECT_FALSE(parsed->IsSparseLayer(0));  // (0 + 1) % 2 != 0
  EXPECT_TRUE(parsed->IsSparseLayer(1));
  EXPECT_FALSE(parsed->IsSparseLayer(3));  // listed in mlp_only_layers
  Result<ModelConfig> again = ParseModelConfigJson(ModelConfigToJson(*parsed), "again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->decoder_sparse_step, 2);
  EXPECT_EQ(again->mlp_only_layers, std::vector<int64_t>{3});
  EXPECT_EQ(again->expert_intermediate_size, 768);
  EXPECT_TRUE(again->norm_topk_prob);
}

TEST(ModelConfigJson, MixtralAlwaysRenormalisesAndItsExpertsAreIntermediateSize) {
  Result<ModelConfig> parsed = ParseModelConfigJson(
      R"({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 32,
          "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
          "vocab_size": 10, "max_position_embeddings": 16, "num_local_experts": 8, "num_experts_per_tok": 2,
          "router_jitter_noise": 0.0, "sliding_window": null})",
      "config.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->num_experts, 8);
  EXPECT_EQ(parsed->expert_intermediate_size, 64);
  EXPECT_TRUE(parsed->norm_topk_prob);
  EXPECT_TRUE(parsed->IsSparseLayer(0));
  EXPECT_TRUE(parsed->IsSparseLayer(1));
}

TEST(ModelConfigJson, ExpertFieldsOfAnotherFamilyAreRefusedNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("architectures": ["LlamaForCausalLM"], "num_experts": 8)", "num_experts"},
      {R"("architectures": ["MixtralForCausalLM"], "num_local_experts": 8, "num_experts_per_tok": 2,
          "norm_topk_prob": false)",
       "norm_topk_prob"},
      {R"("architectures": ["MixtralForCausalLM"], "num_local_experts": 8, "num_experts_per_tok": 2,
          "mlp_only_layers": [0])",
       "mlp_only_layers"},
      {R"("architectures": ["MixtralForCausalLM"], "num_local_experts": 4, "num_experts_per_tok": 5)",
       "num_experts_per_tok"},
      {R"("architectures": ["Qwen3MoeForCausalLM"], "num_experts": 4, "num_experts_per_tok": 2,
          "moe_intermediate_size": 8, "mlp_only_layers": [2])",
       "mlp_only_layers"},
      {R"("architectures": ["Qwen3MoeForCausalLM"], "num_experts": 4, "num_experts_per_tok": 2)",
       "moe_intermediate_size"},
  };
  for (const auto& [fields, named] : cases) {
    const std::string json =
        std::string(R"({"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "vocab_size": 10, "max_position_embeddings": 16, )") +
        fields + "}";
    Result<ModelConfig> parsed = ParseModelConfigJson(json, "config.json");
    ASSERT_FALSE(parsed) << fields;
    EXPECT_NE(parsed.error().message.find(named), std::string::npos) << parsed.error().message;
  }
}

}  // namespace
}  // namespace inferno
