#include "text/chat_template/lexer.h"

#include <gtest/gtest.h>

namespace inferno::chat {
namespace {

// The tokens' texts, with kind markers for the tag delimiters and text.
std::vector<std::string> Texts(std::string_view source) {
  Result<std::vector<Token>> tokens = Lex(source);
  EXPECT_TRUE(tokens) << tokens.error().ToString();
  std::vector<std::string> texts;
  if (!tokens) return texts;
  for (const Token& token : *tokens) {
    if (token.kind == TokenKind::kText) {
      texts.push_back("T:" + token.text);
    } else if (token.kind == TokenKind::kString) {
      texts.push_back("S:" + token.text);
    } else if (token.kind != TokenKind::kEnd) {
      texts.push_back(token.text);
    }
  }
  return texts;
}

using Texts_ = std::vector<std::string>;

TEST(Lexer, SplitsTextAndTags) {
  EXPECT_EQ(Texts("a{{ x.y[0] }}b"), (Texts_{"T:a", "{{", "x", ".", "y", "[", "0", "]", "}}", "T:b"}));
  EXPECT_EQ(Texts("{% if a == 'b' %}"), (Texts_{"{%", "if", "a", "==", "S:b", "%}"}));
}

TEST(Lexer, OperatorsTakeTheLongestMatch) {
  EXPECT_EQ(Texts("{{ a // b ** c != d <= e }}"),
            (Texts_{"{{", "a", "//", "b", "**", "c", "!=", "d", "<=", "e", "}}"}));
}

TEST(Lexer, DashesStripWhitespaceAroundTags) {
  EXPECT_EQ(Texts("a \n {{- x -}} \n b"), (Texts_{"T:a", "{{", "x", "}}", "T:b"}));
  EXPECT_EQ(Texts("a  {%- if x -%}\n  b"), (Texts_{"T:a", "{%", "if", "x", "%}", "T:b"}));
}

TEST(Lexer, TrimBlocksDropsOneNewlineAfterABlockOnly) {
  EXPECT_EQ(Texts("{% if x %}\n\nb"), (Texts_{"{%", "if", "x", "%}", "T:\nb"}));
  EXPECT_EQ(Texts("{{ x }}\nb"), (Texts_{"{{", "x", "}}", "T:\nb"}));
  EXPECT_EQ(Texts("{% if x +%}\nb"), (Texts_{"{%", "if", "x", "%}", "T:\nb"}));
}

TEST(Lexer, LstripBlocksDropsIndentationBeforeBlocksAtLineStart) {
  EXPECT_EQ(Texts("a\n    {% if x %}"), (Texts_{"T:a\n", "{%", "if", "x", "%}"}));
  EXPECT_EQ(Texts("a  {% if x %}"), (Texts_{"T:a  ", "{%", "if", "x", "%}"}));
  EXPECT_EQ(Texts("a\n  {{ x }}"), (Texts_{"T:a\n  ", "{{", "x", "}}"}));
  EXPECT_EQ(Texts("a\n  {%+ if x %}"), (Texts_{"T:a\n  ", "{%", "if", "x", "%}"}));
}

TEST(Lexer, CommentsVanishWithTheirWhitespaceControl) {
  EXPECT_EQ(Texts("a {#- note {{ x }} -#} b"), (Texts_{"T:a", "T:b"}));
  EXPECT_EQ(Texts("a\n  {# note #}\nb"), (Texts_{"T:a\n", "T:b"}));
}

TEST(Lexer, DropsOneTrailingNewline) { EXPECT_EQ(Texts("hi\n\n"), (Texts_{"T:hi\n"})); }

TEST(Lexer, DecodesStringEscapesLikePython) {
  EXPECT_EQ(Texts(R"({{ 'a\n\t\'\\' "\x41\u00e9" '\d' }})"),
            (Texts_{"{{", "S:a\n\t'\\", "S:Aé", "S:\\d", "}}"}));
}

TEST(Lexer, DictBracesDoNotCloseAnExpression) {
  EXPECT_EQ(Texts("{{ {'a': {'b': 1}} }}"),
            (Texts_{"{{", "{", "S:a", ":", "{", "S:b", ":", "1", "}", "}", "}}"}));
}

TEST(Lexer, TokensKnowTheirLineAndColumn) {
  Result<std::vector<Token>> tokens = Lex("ab\n  {{ x }}");
  ASSERT_TRUE(tokens);
  EXPECT_EQ((*tokens)[1].line, 2);
  EXPECT_EQ((*tokens)[1].column, 3);
  EXPECT_EQ((*tokens)[2].column, 6);
  EXPECT_EQ(Where((*tokens)[2]), "line 2, column 6");
}

TEST(Lexer, UnclosedTagIsAnErrorNamingItsStart) {
  const Result<std::vector<Token>> tokens = Lex("hello\n {% if x ");
  ASSERT_FALSE(tokens);
  EXPECT_EQ(tokens.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(tokens.error().message, "line 2, column 2: tag '{%' is never closed");
}

TEST(Lexer, UnclosedCommentStringAndExpressionAreErrors) {
  EXPECT_FALSE(Lex("{# open"));
  EXPECT_FALSE(Lex("{{ 'open }}"));
  EXPECT_FALSE(Lex("{{ x"));
  EXPECT_FALSE(Lex("{{ '\\"));
}

TEST(Lexer, BadCharactersAndEscapesAreErrors) {
  EXPECT_EQ(Lex("{{ a ! b }}").error().message, "line 1, column 6: unexpected character '!' in a tag");
  EXPECT_FALSE(Lex("{{ '\\xZZ' }}"));
  EXPECT_FALSE(Lex("{{ '\\ud800' }}"));
  EXPECT_EQ(Lex("{{ '\\101' }}").error().kind, ErrorKind::kUnimplemented);
}

TEST(Lexer, FloatLiteralsAreUnimplemented) {
  const Result<std::vector<Token>> tokens = Lex("{{ 1.5 }}");
  ASSERT_FALSE(tokens);
  EXPECT_EQ(tokens.error().kind, ErrorKind::kUnimplemented);
}

}  // namespace
}  // namespace inferno::chat
