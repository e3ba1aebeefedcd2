// ChatTemplate against golden renderings from an independent implementation
// (testdata/*_golden.json, written by make_golden.mjs with @huggingface/jinja):
// the public templates in testdata/*.jinja (with tools for Llama 3.1 and 3.2), and the chat templates of the
// real Llama 3 and Qwen 3 tokenizer_config.json files that tools/fetch_tokenizers.sh caches (those cases skip
// when the files are absent).
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "text/chat_template/chat_template.h"
#include "text/chat_template/json_value.h"
#include "text/chat_template/tokenizer_config.h"
#include "text/hf_tokenizer/real_tokenizers.h"

namespace inferno {
namespace {

constexpr char kTestdata[] = "text/chat_template/testdata/";

// The tokenizer_config.json of a real tokenizer cached by tools/fetch_tokenizers.sh.
std::string RealTokenizerConfig(const std::string& name) {
  return hf::RealTokenizersDir() + "/" + name + "/models/tokenizer_config.json";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

std::optional<std::string> OptionalString(const nlohmann::ordered_json& value) {
  if (value.is_null()) return std::nullopt;
  return value.get<std::string>();
}

class GoldenTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::ifstream in(kTestdata + GetParam() + "_golden.json");
    ASSERT_TRUE(in) << "golden file for " << GetParam();
    golden_ = nlohmann::ordered_json::parse(in);
  }

  // The template's source: testdata/<name>.jinja, or the chat_template of
  // the real tokenizer_config.json (whose tokens must be the golden's).
  std::optional<std::string> Source() {
    const std::string file = kTestdata + GetParam() + ".jinja";
    if (std::filesystem::exists(file)) return ReadFile(file);
    const std::string path = RealTokenizerConfig(GetParam());
    if (!std::filesystem::exists(path)) return std::nullopt;
    Result<TokenizerChatConfig> config = ReadTokenizerChatConfig(path);
    EXPECT_TRUE(config) << config.error().ToString();
    if (!config) return std::nullopt;
    // The golden was written from the package tools/fetch_tokenizers.sh fetched.
    EXPECT_EQ(golden_.at("provenance").at("tokenizer").at("sha256").get<std::string>(),
              Trimmed(ReadFile(hf::RealTokenizersDir() + "/" + GetParam() + "/.sha256")))
        << "the golden's tokenizer package is not the fetched one: rerun make_golden.mjs";
    EXPECT_EQ(config->bos_token, OptionalString(golden_.at("bos_token")));
    EXPECT_EQ(config->eos_token, OptionalString(golden_.at("eos_token")));
    EXPECT_TRUE(config->chat_template.has_value());
    return config->chat_template;
  }

  nlohmann::ordered_json golden_;
};

TEST_P(GoldenTest, RendersLikeTheReference) {
  const std::optional<std::string> source = Source();
  if (!source) {
    GTEST_SKIP() << RealTokenizerConfig(GetParam()) << " is absent (run tools/fetch_tokenizers.sh)";
  }
  Result<ChatTemplate> chat = ChatTemplate::Parse(*source);
  ASSERT_TRUE(chat) << chat.error().ToString();
  int matched = 0;
  for (const nlohmann::ordered_json& c : golden_.at("cases")) {
    ChatRequest request;
    for (const nlohmann::ordered_json& m : c.at("messages")) {
      request.messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
    }
    request.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
    request.bos_token = OptionalString(golden_.at("bos_token"));
    request.eos_token = OptionalString(golden_.at("eos_token"));
    for (const auto& [name, value] : c.at("extra").items()) {
      Result<chat::Value> converted = chat::ValueFromJson(value);
      ASSERT_TRUE(converted) << converted.error().message;
      request.extra_variables.emplace_back(name, std::move(*converted));
    }
    const std::string label = c.at("name").get<std::string>() +
                              (request.add_generation_prompt ? " with" : " without") + " generation prompt " +
                              c.at("extra").dump();
    Result<std::string> rendered = chat->Render(request);
    if (c.contains("error")) {
      ASSERT_FALSE(rendered) << label << ": the reference raised \"" << c.at("error").get<std::string>()
                             << "\"";
      EXPECT_EQ(rendered.error().kind, ErrorKind::kInvalidArgument) << label;
      EXPECT_NE(rendered.error().message.find("raise_exception: " + c.at("error").get<std::string>()),
                std::string::npos)
          << label << ": " << rendered.error().ToString();
      matched += rendered.error().message.find(c.at("error").get<std::string>()) != std::string::npos;
      continue;
    }
    ASSERT_TRUE(rendered) << label << ": " << rendered.error().ToString();
    EXPECT_EQ(*rendered, c.at("rendered").get<std::string>()) << label;
    matched += *rendered == c.at("rendered").get<std::string>();
  }
  std::printf("%s: %d of %zu cases render like the reference\n", GetParam().c_str(), matched,
              golden_.at("cases").size());
}

INSTANTIATE_TEST_SUITE_P(Templates, GoldenTest,
                         testing::Values("chatml", "llama2", "llama3_1", "llama3_2", "mistral_v1",
                                         "mistral_v2", "zephyr", "llama3", "qwen3", "gemma3"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// The Mistral 7B v0.1 tokenizer_config.json has no chat template.
TEST(RealTokenizerConfig, MistralHasNoChatTemplateButHasItsTokens) {
  const std::string path = RealTokenizerConfig("mistral");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent (run tools/fetch_tokenizers.sh)";
  Result<TokenizerChatConfig> config = ReadTokenizerChatConfig(path);
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_FALSE(config->chat_template.has_value());
  EXPECT_EQ(config->bos_token, "<s>");
  EXPECT_EQ(config->eos_token, "</s>");
}

}  // namespace
}  // namespace inferno
