#include "text/hf_tokenizer/pre_tokenizer.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno::hf {
namespace {

using json = nlohmann::json;

std::vector<std::string> Words(const json& config, std::string_view text, bool starts_input = true) {
  Result<PreTokenizer> pre_tokenizer = PreTokenizer::FromJson(config);
  EXPECT_TRUE(pre_tokenizer) << pre_tokenizer.error().ToString();
  std::vector<std::string> words;
  if (pre_tokenizer) pre_tokenizer->Split(text, starts_input, words);
  return words;
}

using Strings = std::vector<std::string>;

TEST(PreTokenizer, Llama3RegexSplitsLettersDigitsInThreesAndContractions) {
  const std::string llama3_pattern =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*)"
      R"(|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const json split = {{"type", "Split"},
                      {"pattern", {{"Regex", llama3_pattern}}},
                      {"behavior", "Isolated"},
                      {"invert", false}};
  EXPECT_EQ(Words(split, "I'M 12345  héllo\n"), (Strings{"I", "'M", " ", "123", "45", " ", " héllo", "\n"}));
}

TEST(PreTokenizer, ByteLevelUsesGpt2PatternAndPrefixSpace) {
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(Words(byte_level, "hi you's"), (Strings{" hi", " you", "'s"}));
  Result<PreTokenizer> pre_tokenizer = PreTokenizer::FromJson(byte_level);
  ASSERT_TRUE(pre_tokenizer);
  EXPECT_TRUE(pre_tokenizer->byte_level());
}

TEST(PreTokenizer, MetaspaceReplacesSpacesAndSplitsBeforeThem) {
  const json metaspace = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}};
  EXPECT_EQ(Words(metaspace, "a b"), (Strings{"▁a", "▁b"}));
  EXPECT_EQ(Words(metaspace, "a b", /*starts_input=*/false), (Strings{"a", "▁b"}));
  const json unsplit = {{"type", "Metaspace"}, {"replacement", "▁"}, {"split", false}};
  EXPECT_EQ(Words(unsplit, "a  b"), (Strings{"▁a▁▁b"}));
}

TEST(PreTokenizer, SplitBehaviors) {
  auto split = [](const char* behavior) {
    return json{{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}};
  };
  EXPECT_EQ(Words(split("Removed"), "a-b--c"), (Strings{"a", "b", "c"}));
  EXPECT_EQ(Words(split("Isolated"), "a-b"), (Strings{"a", "-", "b"}));
  EXPECT_EQ(Words(split("MergedWithPrevious"), "a-b--c"), (Strings{"a-", "b-", "-", "c"}));
  EXPECT_EQ(Words(split("MergedWithNext"), "a-b--c"), (Strings{"a", "-b", "-", "-c"}));
}

TEST(PreTokenizer, UnsupportedTypesAndOptionsAreNamed) {
  auto error = [](const json& config) {
    Result<PreTokenizer> pre_tokenizer = PreTokenizer::FromJson(config);
    return pre_tokenizer ? std::string() : pre_tokenizer.error().message;
  };
  EXPECT_EQ(error({{"type", "Digits"}}), "pre_tokenizer type \"Digits\"");
  EXPECT_EQ(error({{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", "Contiguous"}}),
            "pre_tokenizer Split with behavior \"Contiguous\"");
  EXPECT_NE(error({{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}})
                .find("pre_tokenizer Split: regex (unclosed"),
            std::string::npos);
}

}  // namespace
}  // namespace inferno::hf
