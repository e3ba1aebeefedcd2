#include "text/chat_template/renderer.h"

#include <gtest/gtest.h>

#include "text/chat_template/parser.h"

namespace inferno::chat {
namespace {

Value S(std::string text) { return Value::String(std::move(text)); }

const ValueDict& Variables() {
  static const ValueDict* variables = new ValueDict{
      {"messages", Value::List({Value::Dict({{"role", S("system")}, {"content", S("sys")}}),
                                Value::Dict({{"role", S("user")}, {"content", S("hi")}}),
                                Value::Dict({{"role", S("assistant")}, {"content", S("yo")}})})},
      {"n", Value::Int(7)},
      {"name", S("héllo")},
      {"none", Value::None()},
  };
  return *variables;
}

Result<std::string> TryRender(std::string_view source, const ValueDict& variables = Variables()) {
  Result<NodeList> nodes = ParseTemplate(source);
  if (!nodes) return nodes.error();
  return RenderTemplate(*nodes, variables);
}

std::string Render(std::string_view source) {
  Result<std::string> text = TryRender(source);
  EXPECT_TRUE(text) << source << ": " << text.error().ToString();
  return text ? *text : "<error>";
}

Error RenderError(std::string_view source) {
  Result<std::string> text = TryRender(source);
  EXPECT_FALSE(text) << source << " rendered \"" << (text ? *text : "") << "\"";
  return text ? Error() : text.error();
}

TEST(Renderer, PrintsTextAndExpressions) {
  EXPECT_EQ(Render("a{{ n }}b{{ name }}{{ missing }}{{ none }}{{ true }}"), "a7bhélloNoneTrue");
}

TEST(Renderer, IfElifElse) {
  EXPECT_EQ(Render("{% if n > 9 %}big{% elif n > 5 %}mid{% else %}small{% endif %}"), "mid");
  EXPECT_EQ(Render("{% if missing %}x{% else %}y{% endif %}"), "y");
  EXPECT_EQ(Render("{% if missing %}x{% endif %}"), "");
}

TEST(Renderer, ForWithLoopVariables) {
  EXPECT_EQ(
      Render("{% for m in messages %}{{ loop.index0 }}{{ loop.index }}{{ loop.revindex }}"
             "{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %}{{ m.role[0] }}{{ loop.length }}|"
             "{% endfor %}"),
      "013Fs3|122u3|231La3|");
}

TEST(Renderer, ForElseRunsOnEmptyAndUndefinedIterables) {
  EXPECT_EQ(Render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(Render("{% for x in missing %}x{% else %}none{% endfor %}"), "none");
}

TEST(Renderer, ForUnpacksPairsAndIteratesStringsAndDicts) {
  EXPECT_EQ(Render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(Render("{% for c in 'hé' %}[{{ c }}]{% endfor %}"), "[h][é]");
  EXPECT_EQ(Render("{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}"), "ab");
  EXPECT_EQ(RenderError("{% for a, b in [1] %}{% endfor %}").kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(RenderError("{% for a in n %}{% endfor %}").message,
            "line 1, column 13: cannot loop over a integer");
}

TEST(Renderer, SetInsideALoopStaysInTheIterationButNamespacesCarryOut) {
  EXPECT_EQ(Render("{% set x = 'outer' %}{% for m in messages %}{% set x = m.role %}{% endfor %}{{ x }}"),
            "outer");
  EXPECT_EQ(Render("{% set ns = namespace(last='') %}{% for m in messages %}{% set ns.last = m.role %}"
                   "{% endfor %}{{ ns.last }}"),
            "assistant");
  EXPECT_EQ(Render("{% if true %}{% set y = 2 %}{% endif %}{{ y }}"), "2");
  EXPECT_EQ(
      RenderError("{% set n.x = 1 %}").message,
      "line 1, column 1: cannot set an attribute of 'n', a integer (only namespace() objects have settable "
      "attributes)");
}

TEST(Renderer, SubscriptsAndSlicesFollowPython) {
  EXPECT_EQ(Render("{{ messages[-1]['content'] }}{{ messages[1].role }}{{ messages[5] is defined }}"),
            "youserFalse");
  EXPECT_EQ(Render("{% for m in messages[1:] %}{{ m.role }},{% endfor %}"), "user,assistant,");
  EXPECT_EQ(Render("{% for m in messages[::-1] %}{{ m.role }},{% endfor %}"), "assistant,user,system,");
  EXPECT_EQ(Render("{{ name[1:3] }}|{{ name[::-1] }}|{{ name[-2:] }}|{{ name[1] }}|{{ name[9:] }}"),
            "él|olléh|lo|é|");
  EXPECT_EQ(Render("{% for i in range(10)[8:2:-3] %}{{ i }}{% endfor %}"), "85");
  EXPECT_EQ(RenderError("{{ name[::0] }}").kind, ErrorKind::kInvalidArgument);
}

TEST(Renderer, OperatorsFollowPython) {
  EXPECT_EQ(
      Render("{{ 'a' + 'b' }}{{ 1 + 2 * 3 }}{{ -7 // 2 }}{{ -7 % 3 }}{{ 7 % -3 }}{{ 'x' ~ 1 ~ missing }}"),
      "ab7-42-2x1");
  EXPECT_EQ(
      Render("{{ 'llo' in name }}{{ 'user' in ['user'] }}{{ 'role' in messages[0] }}{{ 'x' not in 'abc' }}"),
      "TrueTrueTrueTrue");
  EXPECT_EQ(Render("{{ 'a' < 'b' }}{{ 2 >= 3 }}{{ 1 == 1 }}{{ '1' == 1 }}{{ none != false }}"),
            "TrueFalseTrueFalseTrue");
  EXPECT_EQ(Render("{{ (messages + [1])|length }}"), "4");
}

TEST(Renderer, AndOrReturnOperandsAndShortCircuit) {
  EXPECT_EQ(Render("{{ missing or 'default' }}|{{ n and name }}|{{ '' and raise_exception('no') }}|"
                   "{{ n or raise_exception('no') }}"),
            "default|héllo||7");
}

TEST(Renderer, ConditionalExpressions) {
  EXPECT_EQ(Render("{{ 'yes' if n else 'no' }}{{ 'yes' if missing else 'no' }}{{ 'only' if false }}"),
            "yesno");
}

TEST(Renderer, TestsWithNot) {
  EXPECT_EQ(Render("{{ missing is defined }}{{ n is not none }}{{ none is none }}{{ name is string }}"
                   "{{ not missing is defined }}"),
            "FalseTrueTrueTrueTrue");
}

TEST(Renderer, GlobalFunctionsAreDefinedUnlessShadowed) {
  EXPECT_EQ(Render("{{ strftime_now is defined }}{{ raise_exception is defined }}{{ lipsum is defined }}"),
            "TrueTrueFalse");
  EXPECT_EQ(Render("{% set strftime_now = none %}{{ strftime_now is none }}"), "True");
  EXPECT_EQ(RenderError("{{ range }}").kind, ErrorKind::kUnimplemented);
}

TEST(Renderer, FiltersAndMethodsChain) {
  EXPECT_EQ(
      Render("{{ '  Hi  ' | trim | upper }}{{ messages | length - 1 }}{{ name.upper() if false else 'x' }}"),
      "HI2x");
  EXPECT_EQ(Render("{{ 'a</think>\\n\\nb'.split('</think>')[-1].lstrip('\\n') }}"), "b");
  EXPECT_EQ(Render("{{ messages[1] | tojson }}"), R"({"role": "user", "content": "hi"})");
}

TEST(Renderer, ErrorsNameTheirPosition) {
  Error error = RenderError("line one\n{{ raise_exception('roles must alternate') }}");
  EXPECT_EQ(error.kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(error.message, "line 2, column 4: raise_exception: roles must alternate");
  EXPECT_EQ(RenderError("{{ 'a' + 1 }}").message,
            "line 1, column 8: unsupported operand kinds for '+': string and integer");
  EXPECT_EQ(RenderError("{{ missing.attr }}").message,
            "line 1, column 12: attribute 'attr' of an undefined value");
  EXPECT_EQ(RenderError("{{ missing.strip() }}").message,
            "line 1, column 12: calling 'strip' on an undefined value");
  EXPECT_EQ(RenderError("{{ missing[0] }}").kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(RenderError("{{ n.strip() }}").message,
            "line 1, column 6: strip: expected a string, got a integer");
  EXPECT_EQ(RenderError("{{ messages }}").kind, ErrorKind::kUnimplemented);
  EXPECT_EQ(RenderError("{{ 1 // 0 }}").kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(RenderError("{{ 9223372036854775807 + 1 }}").kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(RenderError("{{ -(-9223372036854775807 - 1) }}").kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(RenderError("{{ {1: 2} }}").kind, ErrorKind::kUnimplemented);
}

TEST(Renderer, RunawayTemplatesStop) {
  EXPECT_NE(RenderError("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
                        "{% endfor %}")
                .message.find("a string longer than"),
            std::string::npos);
  EXPECT_NE(RenderError("{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}"
                        "{% endfor %}")
                .message.find("a list longer than"),
            std::string::npos);
  EXPECT_EQ(
      RenderError("{% for a in range(1000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}").message,
      "line 1, column 27: the template loops more than 100000 times");
}

TEST(Renderer, OutputIsBounded) {
  Result<NodeList> nodes = ParseTemplate("{% for i in range(100) %}{{ megabyte }}{% endfor %}");
  ASSERT_TRUE(nodes);
  const Result<std::string> text = RenderTemplate(*nodes, {{"megabyte", S(std::string(1 << 20, 'x'))}});
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().message, "line 1, column 26: the output exceeds 67108864 bytes");
}

}  // namespace
}  // namespace inferno::chat
