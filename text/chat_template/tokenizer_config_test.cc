#include "text/chat_template/tokenizer_config.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(TokenizerChatConfig, ReadsStringTemplateAndTokens) {
  Result<TokenizerChatConfig> config = ParseTokenizerChatConfig(
      R"({"chat_template": "{{ x }}", "bos_token": "<s>", "eos_token": "</s>", "model_max_length": 1e30})");
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_EQ(config->chat_template, "{{ x }}");
  EXPECT_EQ(config->bos_token, "<s>");
  EXPECT_EQ(config->eos_token, "</s>");
  EXPECT_FALSE(config->add_bos_token.has_value());
}

TEST(TokenizerChatConfig, ReadsAddBosToken) {
  EXPECT_EQ(ParseTokenizerChatConfig(R"({"add_bos_token": false})")->add_bos_token, false);
  EXPECT_EQ(ParseTokenizerChatConfig(R"({"add_bos_token": true})")->add_bos_token, true);
  EXPECT_EQ(ParseTokenizerChatConfig(R"({"add_bos_token": "yes"})").error().message,
            "add_bos_token is not a boolean");
}

TEST(TokenizerChatConfig, TokensMayBeAddedTokenObjectsOrNull) {
  Result<TokenizerChatConfig> config = ParseTokenizerChatConfig(
      R"({"bos_token": null, "eos_token": {"__type": "AddedToken", "content": "<|im_end|>", "lstrip": false}})");
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_FALSE(config->chat_template.has_value());
  EXPECT_FALSE(config->bos_token.has_value());
  EXPECT_EQ(config->eos_token, "<|im_end|>");
}

TEST(TokenizerChatConfig, PicksTheDefaultOfNamedTemplates) {
  Result<TokenizerChatConfig> config = ParseTokenizerChatConfig(
      R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_EQ(config->chat_template, "D");
}

TEST(TokenizerChatConfig, NamedTemplatesWithoutDefaultIsNotFound) {
  const Result<TokenizerChatConfig> config =
      ParseTokenizerChatConfig(R"({"chat_template": [{"name": "rag", "template": "R"}]})");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind, ErrorKind::kNotFound);
}

TEST(TokenizerChatConfig, WrongTypesAreCorruption) {
  for (std::string_view json : {R"({"chat_template": 3})", R"({"chat_template": [{"name": "default"}]})",
                                R"({"chat_template": ["x"]})", R"({"bos_token": 1})",
                                R"({"eos_token": {"id": 2}})", "[1]", "{", "", "{\"a\": \"\xff\"}"}) {
    const Result<TokenizerChatConfig> config = ParseTokenizerChatConfig(json);
    ASSERT_FALSE(config) << json;
    EXPECT_EQ(config.error().kind, ErrorKind::kCorruption) << json;
  }
  EXPECT_EQ(ParseTokenizerChatConfig(R"({"bos_token": 1})").error().message,
            "bos_token is neither a string nor an object with a string \"content\"");
}

TEST(TokenizerChatConfig, MissingFileIsAnIoErrorNamingThePath) {
  const Result<TokenizerChatConfig> config = ReadTokenizerChatConfig("/nonexistent/tokenizer_config.json");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind, ErrorKind::kIo);
  EXPECT_NE(config.error().message.find("/nonexistent/tokenizer_config.json"), std::string::npos);
}

}  // namespace
}  // namespace inferno
