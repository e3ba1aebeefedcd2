#include "loader/model_config.h"

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
