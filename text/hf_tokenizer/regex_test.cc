#include "text/hf_tokenizer/regex.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace inferno::hf {
namespace {

using Spans = std::vector<std::pair<size_t, size_t>>;

TEST(Regex, UnicodePropertiesAndWhitespaceAreUnicodeAware) {
  Result<Regex> letters = Regex::Compile(R"(\p{L}+|\p{N}+|\s+)", /*literal=*/false);
  ASSERT_TRUE(letters) << letters.error().ToString();
  // "héllo" is 6 bytes, U+3000 (ideographic space) 3, "٣" (Arabic-Indic three) 2.
  EXPECT_EQ(letters->FindAll("héllo\u3000٣"), (Spans{{0, 6}, {6, 3}, {9, 2}}));
}

// \s is Unicode's White_Space, as in Oniguruma (Hugging Face tokenizers):
// U+0085 (NEL) is whitespace, U+FEFF is not (JavaScript's \s differs on both).
TEST(Regex, WhitespaceIsUnicodeWhiteSpace) {
  Result<Regex> space = Regex::Compile(R"(\s)", /*literal=*/false);
  ASSERT_TRUE(space);
  EXPECT_EQ(space->FindAll("\u0085\uFEFF\u2028"), (Spans{{0, 2}, {5, 3}}));
}

TEST(Regex, LiteralPatternMatchesItsText) {
  Result<Regex> dots = Regex::Compile("a.", /*literal=*/true);
  ASSERT_TRUE(dots) << dots.error().ToString();
  EXPECT_EQ(dots->FindAll("abca.a."), (Spans{{3, 2}, {5, 2}}));
}

TEST(Regex, EmptyMatchesAdvanceByOneCharacter) {
  Result<Regex> empty = Regex::Compile("x*", /*literal=*/false);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->FindAll("éxx"), (Spans{{2, 2}}));
}

TEST(Regex, BadPatternIsInvalidArgumentWithOffset) {
  Result<Regex> bad = Regex::Compile("(a", /*literal=*/false);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("at offset 2"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace inferno::hf
