#include "text/hf_tokenizer/token_decoder.h"

#include <string>

#include <gtest/gtest.h>

namespace inferno::hf {
namespace {

using json = nlohmann::json;

TokenDecoder MustBuild(const json& config) {
  Result<TokenDecoder> decoder = TokenDecoder::FromJson(config);
  EXPECT_TRUE(decoder) << decoder.error().ToString();
  return decoder ? std::move(*decoder) : TokenDecoder();
}

TEST(TokenDecoder, MistralSequenceReplacesFallsBackToBytesAndStripsTheFirstSpace) {
  const TokenDecoder decoder =
      MustBuild({{"type", "Sequence"},
                 {"decoders",
                  {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
                   {{"type", "ByteFallback"}},
                   {{"type", "Fuse"}},
                   {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}});
  EXPECT_EQ(decoder.Decode("▁Hello", /*starts_sequence=*/true), "Hello");
  EXPECT_EQ(decoder.Decode("▁Hello", /*starts_sequence=*/false), " Hello");
  EXPECT_EQ(decoder.Decode("<0xE4>", false), "\xE4");
  EXPECT_EQ(decoder.Decode("<0xZZ>", false), "<0xZZ>");
}

TEST(TokenDecoder, ByteLevelMapsCharactersBackToBytes) {
  const TokenDecoder decoder = MustBuild({{"type", "ByteLevel"}});
  EXPECT_EQ(decoder.Decode("ĠhelloĊ", false), " hello\n");
  EXPECT_EQ(decoder.Decode("ä¸", false), "\xE4\xB8");  // the first two bytes of 中
  EXPECT_EQ(decoder.Decode("<|eot_id|>", false), "<|eot_id|>");
  EXPECT_EQ(decoder.Decode("中", false), "中");  // outside the alphabet: as it is
}

TEST(TokenDecoder, MetaspaceDropsTheSpaceOfTheFirstToken) {
  const TokenDecoder decoder =
      MustBuild({{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}});
  EXPECT_EQ(decoder.Decode("▁a▁b", true), "a b");
  EXPECT_EQ(decoder.Decode("▁a", false), " a");
}

TEST(TokenDecoder, UnsupportedTypesAndOptionsAreNamed) {
  Result<TokenDecoder> word_piece = TokenDecoder::FromJson({{"type", "WordPiece"}});
  ASSERT_FALSE(word_piece);
  EXPECT_EQ(word_piece.error().message, "decoder type \"WordPiece\"");
  Result<TokenDecoder> trailing = TokenDecoder::FromJson(
      {{"type", "Sequence"},
       {"decoders", {{{"type", "Fuse"}}, {{"type", "Strip"}, {"content", " "}, {"start", 0}, {"stop", 1}}}}});
  ASSERT_FALSE(trailing);
  EXPECT_NE(trailing.error().message.find("Strip with stop 1 after Fuse"), std::string::npos);
}

}  // namespace
}  // namespace inferno::hf
