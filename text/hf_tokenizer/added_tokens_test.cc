#include "text/hf_tokenizer/added_tokens.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno::hf {
namespace {

// "text|id text|id" rendering of a split, for compact expectations.
std::string Render(const AddedTokenMatcher& matcher, std::string_view text) {
  std::string out;
  for (const TextSegment& segment : matcher.Split(text)) {
    out += "[" + std::string(segment.text) + "]";
    if (segment.token_id >= 0) out += std::to_string(segment.token_id);
  }
  return out;
}

TEST(AddedTokenMatcher, TakesTheLongestTokenAtTheLeftmostPosition) {
  AddedTokenMatcher matcher({{.id = 1, .content = "<|a|>"}, {.id = 2, .content = "<|a|><|b|>"}});
  EXPECT_EQ(Render(matcher, "x<|a|><|b|>y<|a|>"), "[x][<|a|><|b|>]2[y][<|a|>]1");
  EXPECT_EQ(Render(matcher, "<|a|"), "[<|a|]");
  EXPECT_EQ(Render(matcher, ""), "");
}

TEST(AddedTokenMatcher, StripAbsorbsNeighbouringWhitespace) {
  AddedTokenMatcher matcher({{.id = 7, .content = "<m>", .lstrip = true, .rstrip = true}});
  EXPECT_EQ(Render(matcher, "a  <m>\n b"), "[a][  <m>\n ]7[b]");
}

TEST(AddedTokenMatcher, SingleWordTokensMatchOnlyAsWholeWords) {
  AddedTokenMatcher matcher({{.id = 3, .content = "cat", .single_word = true}});
  EXPECT_EQ(Render(matcher, "cat concat cats cat."), "[cat]3[ concat cats ][cat]3[.]");
}

}  // namespace
}  // namespace inferno::hf
