#include "text/utf8.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(Utf8, CharLengthRejectsMalformedSequences) {
  EXPECT_EQ(Utf8CharLength("a", 0), 1u);
  EXPECT_EQ(Utf8CharLength("é", 0), 2u);
  EXPECT_EQ(Utf8CharLength("😀", 0), 4u);
  EXPECT_EQ(Utf8CharLength("\x80", 0), 0u);          // stray continuation byte
  EXPECT_EQ(Utf8CharLength("\xC0\xAF", 0), 0u);      // overlong
  EXPECT_EQ(Utf8CharLength("\xED\xA0\x80", 0), 0u);  // surrogate
  EXPECT_EQ(Utf8CharLength("\xE4\xB8", 0), 0u);      // truncated
}

TEST(Utf8, DecodeAndAppendRoundTrip) {
  for (char32_t cp : {U'a', U'é', U'中', U'😀'}) {
    std::string text;
    Utf8Append(cp, text);
    ASSERT_EQ(Utf8CharLength(text, 0), text.size());
    EXPECT_EQ(Utf8Decode(text, 0, text.size()), cp);
  }
}

TEST(Utf8, CompletePrefixHoldsBackOnlyAnUnfinishedCharacter) {
  EXPECT_EQ(Utf8CompletePrefixLength("ab"), 2u);
  EXPECT_EQ(Utf8CompletePrefixLength("a\xE4\xB8"), 1u);
  EXPECT_EQ(Utf8CompletePrefixLength("a\xF0\x9F\x98"), 1u);
  EXPECT_EQ(Utf8CompletePrefixLength("a\xE4\xB8\xAD"), 4u);
  EXPECT_EQ(Utf8CompletePrefixLength("a\xFF"), 2u);  // invalid: not held back
  EXPECT_EQ(Utf8CompletePrefixLength("a\xE4"
                                     "A"),
            3u);  // cut short: not held back
}

TEST(Utf8, IsValidUtf8RejectsAnyMalformedByte) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("a\u00e9\u4e2d\U0001F600"));
  EXPECT_FALSE(IsValidUtf8("a\xFF"));
  EXPECT_FALSE(IsValidUtf8("\xE4\xB8"));
}

TEST(Utf8, LossyReplacesEachMaximalInvalidSubsequence) {
  EXPECT_EQ(Utf8Lossy("ok"), "ok");
  EXPECT_EQ(Utf8Lossy("a\xFF"
                      "b"),
            "a\uFFFDb");
  EXPECT_EQ(Utf8Lossy("\xE4\xB8"
                      "b"),
            "\uFFFDb");
  EXPECT_EQ(Utf8Lossy("\xE4\xB8"), "\uFFFD");
}

}  // namespace
}  // namespace inferno
