#include "text/hf_tokenizer/normalizer.h"

#include <string>

#include <gtest/gtest.h>

namespace inferno::hf {
namespace {

using json = nlohmann::json;

std::string Normalized(const json& config, std::string_view text) {
  Result<Normalizer> normalizer = Normalizer::FromJson(config);
  EXPECT_TRUE(normalizer) << normalizer.error().ToString();
  return normalizer ? normalizer->Normalize(text) : "";
}

TEST(Normalizer, NfcComposesAndNfdDecomposes) {
  EXPECT_EQ(Normalized({{"type", "NFC"}}, "e\u0301 A\u030a"), "\u00e9 \u00c5");
  EXPECT_EQ(Normalized({{"type", "NFD"}}, "\u00e9"), "e\u0301");
  EXPECT_EQ(Normalized({{"type", "NFKC"}}, "\uff21\u2460"), "A1");
  EXPECT_EQ(Normalized({{"type", "NFC"}}, "plain ascii"), "plain ascii");
}

TEST(Normalizer, SentencePieceSequencePrependsAndReplacesSpaces) {
  const json sequence = {{"type", "Sequence"},
                         {"normalizers",
                          {{{"type", "Prepend"}, {"prepend", "▁"}},
                           {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}};
  EXPECT_EQ(Normalized(sequence, "a b "), "▁a▁b▁");
  EXPECT_EQ(Normalized(sequence, ""), "");
}

TEST(Normalizer, NullIsTheIdentity) { EXPECT_EQ(Normalized(nullptr, " x "), " x "); }

TEST(Normalizer, UnsupportedTypesAndPatternsAreNamed) {
  Result<Normalizer> lowercase = Normalizer::FromJson({{"type", "Lowercase"}});
  ASSERT_FALSE(lowercase);
  EXPECT_EQ(lowercase.error().kind, ErrorKind::kUnimplemented);
  EXPECT_EQ(lowercase.error().message, "normalizer type \"Lowercase\"");
  Result<Normalizer> regex =
      Normalizer::FromJson({{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", " "}});
  ASSERT_FALSE(regex);
  EXPECT_NE(regex.error().message.find("only String patterns"), std::string::npos);
}

}  // namespace
}  // namespace inferno::hf
