#include "text/chat_template/parser.h"

#include <gtest/gtest.h>

namespace inferno::chat {
namespace {

Error ParseError(std::string_view source) {
  Result<NodeList> nodes = ParseTemplate(source);
  EXPECT_FALSE(nodes) << "parsed: " << source;
  return nodes ? Error() : nodes.error();
}

TEST(Parser, BuildsStatementsWithTheirBodies) {
  Result<NodeList> nodes =
      ParseTemplate("a{% for m in ms %}{% if m %}x{% elif y %}y{% else %}z{% endif %}{% endfor %}");
  ASSERT_TRUE(nodes) << nodes.error().ToString();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].kind, Node::Kind::kText);
  const Node& loop = (*nodes)[1];
  EXPECT_EQ(loop.kind, Node::Kind::kFor);
  EXPECT_EQ(loop.targets, std::vector<std::string>{"m"});
  ASSERT_EQ(loop.body.size(), 1u);
  ASSERT_EQ(loop.body[0].branches.size(), 3u);
  EXPECT_EQ(loop.body[0].branches[2].condition, nullptr);
}

TEST(Parser, FiltersBindTighterThanArithmetic) {
  Result<NodeList> nodes = ParseTemplate("{{ messages|length - 1 }}");
  ASSERT_TRUE(nodes);
  const Expr& minus = *(*nodes)[0].expr;
  EXPECT_EQ(minus.kind, Expr::Kind::kBinary);
  EXPECT_EQ(minus.name, "-");
  EXPECT_EQ(minus.children[0]->kind, Expr::Kind::kFilter);
}

TEST(Parser, NotInBecomesNegatedIn) {
  Result<NodeList> nodes = ParseTemplate("{{ 'a' not in b }}");
  ASSERT_TRUE(nodes);
  const Expr& negation = *(*nodes)[0].expr;
  EXPECT_EQ(negation.kind, Expr::Kind::kNot);
  EXPECT_EQ(negation.children[0]->name, "in");
}

TEST(Parser, SetOnANamespaceAttribute) {
  Result<NodeList> nodes = ParseTemplate("{% set ns.found = true %}");
  ASSERT_TRUE(nodes);
  EXPECT_EQ((*nodes)[0].targets[0], "ns");
  EXPECT_EQ((*nodes)[0].attribute, "found");
}

TEST(Parser, UnclosedBlockNamesWhereItOpened) {
  EXPECT_EQ(ParseError("x\n{% if a %}b").message,
            "line 2, column 1: '{% if %}' is never closed (no '{% endif %}')");
  EXPECT_EQ(ParseError("{% for a in b %}").message,
            "line 1, column 1: '{% for %}' is never closed (no '{% endfor %}')");
}

TEST(Parser, StrayEndTagIsAnError) {
  const Error error = ParseError("{% endif %}");
  EXPECT_EQ(error.kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(error.message, "line 1, column 4: '{% endif %}' without a matching opening tag");
  EXPECT_FALSE(ParseTemplate("{% for a in b %}{% endif %}{% endfor %}"));
}

TEST(Parser, UnknownFilterTestFunctionAndMethodAreUnimplemented) {
  Error error = ParseError("{{ x | safe }}");
  EXPECT_EQ(error.kind, ErrorKind::kUnimplemented);
  EXPECT_EQ(error.message, "line 1, column 8: unknown or unsupported filter 'safe'");
  EXPECT_EQ(ParseError("{{ x is divisibleby(3) }}").message,
            "line 1, column 9: unknown or unsupported test 'divisibleby'");
  EXPECT_EQ(ParseError("{{ lipsum(2) }}").message,
            "line 1, column 4: unknown or unsupported function 'lipsum'");
  EXPECT_EQ(ParseError("{{ x.append(1) }}").message,
            "line 1, column 6: unknown or unsupported method 'append'");
}

TEST(Parser, UnsupportedStatementsAreUnimplemented) {
  for (std::string_view source : {"{% macro f() %}{% endmacro %}", "{% include 'x' %}", "{% break %}",
                                  "{% generation %}", "{% raw %}{% endraw %}"}) {
    const Error error = ParseError(source);
    EXPECT_EQ(error.kind, ErrorKind::kUnimplemented) << source;
    EXPECT_NE(error.message.find("statement is not supported"), std::string::npos) << error.message;
  }
  EXPECT_EQ(ParseError("{% set x %}a{% endset %}").kind, ErrorKind::kUnimplemented);
  EXPECT_EQ(ParseError("{% for x in y if x %}{% endfor %}").kind, ErrorKind::kUnimplemented);
  EXPECT_EQ(ParseError("{{ a < b < c }}").kind, ErrorKind::kUnimplemented);
  EXPECT_EQ(ParseError("{{ a / b }}").kind, ErrorKind::kUnimplemented);
  EXPECT_EQ(ParseError("{{ (x)(1) }}").kind, ErrorKind::kUnimplemented);
}

TEST(Parser, MalformedExpressionsAreInvalidArguments) {
  for (std::string_view source :
       {"{{ }}", "{{ a + }}", "{{ a b }}", "{{ [1, 2 }}", "{{ {'a' 1} }}", "{{ namespace(a=1, 2) }}",
        "{{ x[] }}", "{{ x[1:2:3:4] }}", "{% set = 1 %}", "{% set x 1 %}", "{% for in x %}", "{% for x y %}",
        "{% %}", "{{ x | }}", "{{ x. }}", "{{ 99999999999999999999 }}", "{% if %}{% endif %}"}) {
    const Result<NodeList> nodes = ParseTemplate(source);
    ASSERT_FALSE(nodes) << source;
    EXPECT_EQ(nodes.error().kind, ErrorKind::kInvalidArgument) << source << ": " << nodes.error().ToString();
  }
}

TEST(Parser, DeepNestingIsAnErrorNotACrash) {
  const std::string parens = "{{ " + std::string(10000, '(') + "1" + std::string(10000, ')') + " }}";
  EXPECT_NE(ParseError(parens).message.find("nests deeper"), std::string::npos);
  std::string nots = "{{ ";
  for (int i = 0; i < 10000; ++i) nots += "not ";
  EXPECT_FALSE(ParseTemplate(nots + "x }}"));
  std::string ifs;
  for (int i = 0; i < 10000; ++i) ifs += "{% if x %}";
  EXPECT_FALSE(ParseTemplate(ifs));
  EXPECT_FALSE(ParseTemplate("{{ " + std::string(10000, '-') + "1 }}"));
  EXPECT_FALSE(ParseTemplate("{{ " + std::string(10000, '[') + " }}"));
}

TEST(Parser, ModestNestingIsFine) {
  EXPECT_TRUE(ParseTemplate("{{ " + std::string(50, '(') + "1" + std::string(50, ')') + " }}"));
}

}  // namespace
}  // namespace inferno::chat
