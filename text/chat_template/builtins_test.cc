#include "text/chat_template/builtins.h"

#include <ctime>

#include <gtest/gtest.h>

namespace inferno::chat {
namespace {

Value S(std::string text) { return Value::String(std::move(text)); }

Arguments Positional(std::vector<Value> values) { return Arguments{std::move(values), {}}; }

Value Method(const Value& object, std::string_view name, std::vector<Value> arguments = {}) {
  Result<Value> result = CallMethod(object, name, Positional(std::move(arguments)));
  EXPECT_TRUE(result) << result.error().ToString();
  return result ? *result : Value();
}

Value Filter(std::string_view name, const Value& operand, Arguments arguments = {}) {
  Result<Value> result = ApplyFilter(name, operand, arguments);
  EXPECT_TRUE(result) << result.error().ToString();
  return result ? *result : Value();
}

TEST(Builtins, StripMethodsFollowPythonWithAndWithoutCharacters) {
  EXPECT_EQ(Method(S(" \n\u3000 x y \t\u00a0"), "strip"), S("x y"));
  EXPECT_EQ(Method(S("\n\n x \n"), "strip", {S("\n")}), S(" x "));
  EXPECT_EQ(Method(S("\n\n x \n"), "lstrip", {S("\n")}), S(" x \n"));
  EXPECT_EQ(Method(S("xxaxx"), "rstrip", {S("x")}), S("xxa"));
  EXPECT_EQ(Method(S("éaé"), "strip", {S("é")}), S("a"));
}

TEST(Builtins, TrimFilterStripsWhitespace) {
  EXPECT_EQ(Filter("trim", S("  hi \n")), S("hi"));
  EXPECT_EQ(Filter("trim", Value()), S(""));
}

TEST(Builtins, StartswithAndEndswithTakeAStringOrAList) {
  EXPECT_EQ(Method(S("<tool_response>x"), "startswith", {S("<tool_response>")}), Value::Bool(true));
  EXPECT_EQ(Method(S("abc"), "endswith", {S("abcd")}), Value::Bool(false));
  EXPECT_EQ(Method(S("abc"), "endswith", {Value::List({S("x"), S("bc")})}), Value::Bool(true));
  EXPECT_FALSE(CallMethod(S("abc"), "startswith", Positional({Value::Int(1)})));
}

TEST(Builtins, SplitFollowsPython) {
  EXPECT_EQ(Method(S("a</think>b</think>c"), "split", {S("</think>")}),
            Value::List({S("a"), S("b"), S("c")}));
  EXPECT_EQ(Method(S("no separator"), "split", {S("|")}), Value::List({S("no separator")}));
  EXPECT_EQ(Method(S("  a  b c  "), "split"), Value::List({S("a"), S("b"), S("c")}));
  EXPECT_EQ(Method(S("  a  b c  "), "split", {Value::None(), Value::Int(1)}),
            Value::List({S("a"), S("b c  ")}));
  EXPECT_EQ(Method(S("a,b,c"), "split", {S(","), Value::Int(1)}), Value::List({S("a"), S("b,c")}));
  EXPECT_FALSE(CallMethod(S("a"), "split", Positional({S("")})));
}

TEST(Builtins, ReplaceFollowsPython) {
  EXPECT_EQ(Method(S("a-b-c"), "replace", {S("-"), S("+")}), S("a+b+c"));
  EXPECT_EQ(Method(S("a-b-c"), "replace", {S("-"), S("+"), Value::Int(1)}), S("a+b-c"));
  EXPECT_EQ(Method(S("ab"), "replace", {S(""), S(".")}), S(".a.b."));
}

TEST(Builtins, CaseMappingRefusesNonAscii) {
  EXPECT_EQ(Method(S("User"), "upper"), S("USER"));
  EXPECT_EQ(Filter("lower", S("User")), S("user"));
  EXPECT_EQ(Filter("capitalize", S("hELLO")), S("Hello"));
  const Result<Value> upper = ApplyFilter("upper", S("é"), {});
  ASSERT_FALSE(upper);
  EXPECT_EQ(upper.error().kind, ErrorKind::kUnimplemented);
}

TEST(Builtins, LengthCountsCodePointsItemsAndKeys) {
  EXPECT_EQ(Filter("length", S("é😀")), Value::Int(2));
  EXPECT_EQ(Filter("length", Value::List({Value(), Value()})), Value::Int(2));
  EXPECT_EQ(Filter("count", Value::Dict({{"a", Value()}})), Value::Int(1));
  EXPECT_FALSE(ApplyFilter("length", Value::Int(3), {}));
}

TEST(Builtins, TojsonTakesAnIndent) {
  const Value list = Value::List({Value::Int(1)});
  EXPECT_EQ(Filter("tojson", list), S("[1]"));
  EXPECT_EQ(Filter("tojson", list, Arguments{{}, {{"indent", Value::Int(2)}}}), S("[\n  1\n]"));
  EXPECT_FALSE(ApplyFilter("tojson", list, Arguments{{}, {{"indnet", Value::Int(2)}}}));
}

TEST(Builtins, SequenceFilters) {
  const Value list = Value::List({S("a"), S("b"), S("c")});
  EXPECT_EQ(Filter("first", list), S("a"));
  EXPECT_EQ(Filter("last", list), S("c"));
  EXPECT_TRUE(Filter("first", Value::List({})).is_undefined());
  EXPECT_EQ(Filter("reverse", S("aé")), S("éa"));
  EXPECT_EQ(Filter("join", list, Positional({S(", ")})), S("a, b, c"));
  EXPECT_EQ(Filter("list", S("ab")), Value::List({S("a"), S("b")}));
}

TEST(Builtins, DefaultReplacesUndefinedOrFalsyWithBoolean) {
  EXPECT_EQ(Filter("default", Value(), Positional({S("x")})), S("x"));
  EXPECT_EQ(Filter("default", S(""), Positional({S("x")})), S(""));
  EXPECT_EQ(Filter("default", S(""), Positional({S("x"), Value::Bool(true)})), S("x"));
}

TEST(Builtins, SelectAndRejectFilterByATestOrTruth) {
  const Value list = Value::List({S("a"), S(""), S("code_interpreter"), Value::Int(3)});
  EXPECT_EQ(Filter("reject", list, Positional({S("equalto"), S("code_interpreter")})),
            Value::List({S("a"), S(""), Value::Int(3)}));
  EXPECT_EQ(Filter("select", list, Positional({S("string")})),
            Value::List({S("a"), S(""), S("code_interpreter")}));
  EXPECT_EQ(Filter("select", list), Value::List({S("a"), S("code_interpreter"), Value::Int(3)}));
  const Result<Value> unknown = ApplyFilter("select", list, Positional({S("prime")}));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().kind, ErrorKind::kUnimplemented);
}

TEST(Builtins, StrftimeNowFormatsTheLocalTime) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  const Result<Value> year = CallFunction("strftime_now", Positional({S("%Y")}));
  ASSERT_TRUE(year) << year.error().ToString();
  EXPECT_EQ(*year, S(std::to_string(local.tm_year + 1900)));
  EXPECT_FALSE(CallFunction("strftime_now", Positional({Value::Int(1)})));
  EXPECT_FALSE(CallFunction("strftime_now", {}));
}

TEST(Builtins, DictMethods) {
  const Value dict = Value::Dict({{"a", Value::Int(1)}, {"b", Value::Int(2)}});
  EXPECT_EQ(Method(dict, "items"),
            Value::List({Value::List({S("a"), Value::Int(1)}), Value::List({S("b"), Value::Int(2)})}));
  EXPECT_EQ(Method(dict, "keys"), Value::List({S("a"), S("b")}));
  EXPECT_EQ(Method(dict, "values"), Value::List({Value::Int(1), Value::Int(2)}));
  EXPECT_EQ(Method(dict, "get", {S("a")}), Value::Int(1));
  EXPECT_EQ(Method(dict, "get", {S("z")}), Value::None());
  EXPECT_EQ(Method(dict, "get", {S("z"), S("d")}), S("d"));
  EXPECT_FALSE(CallMethod(S("x"), "items", {}));
}

TEST(Builtins, Tests) {
  const auto test = [](std::string_view name, const Value& operand, std::vector<Value> arguments = {}) {
    Result<bool> result = ApplyTest(name, operand, Positional(std::move(arguments)));
    EXPECT_TRUE(result) << result.error().ToString();
    return result && *result;
  };
  EXPECT_TRUE(test("defined", Value::None()));
  EXPECT_FALSE(test("defined", Value()));
  EXPECT_TRUE(test("undefined", Value()));
  EXPECT_TRUE(test("none", Value::None()));
  EXPECT_TRUE(test("string", S("")));
  EXPECT_FALSE(test("string", Value::Int(1)));
  EXPECT_TRUE(test("false", Value::Bool(false)));
  EXPECT_FALSE(test("false", Value::Int(0)));
  EXPECT_TRUE(test("true", Value::Bool(true)));
  EXPECT_TRUE(test("integer", Value::Int(3)));
  EXPECT_FALSE(test("integer", Value::Bool(true)));
  EXPECT_TRUE(test("mapping", Value::Dict({})));
  EXPECT_TRUE(test("odd", Value::Int(-3)));
  EXPECT_TRUE(test("even", Value::Int(4)));
  EXPECT_TRUE(test("eq", S("a"), {S("a")}));
  EXPECT_TRUE(test("ne", S("a"), {S("b")}));
  EXPECT_FALSE(ApplyTest("odd", S("a"), {}));
}

TEST(Builtins, RaiseExceptionIsAnInvalidArgumentCarryingTheMessage) {
  const Result<Value> raised = CallFunction("raise_exception", Positional({S("roles must alternate")}));
  ASSERT_FALSE(raised);
  EXPECT_EQ(raised.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(raised.error().message, "raise_exception: roles must alternate");
}

TEST(Builtins, NamespaceTakesKeywordsOnly) {
  const Result<Value> ns = CallFunction("namespace", Arguments{{}, {{"found", Value::Bool(false)}}});
  ASSERT_TRUE(ns);
  EXPECT_EQ(ns->kind(), Value::Kind::kNamespace);
  EXPECT_EQ(ns->Get("found"), Value::Bool(false));
  EXPECT_FALSE(CallFunction("namespace", Positional({Value::Dict({})})));
}

TEST(Builtins, RangeIsBounded) {
  EXPECT_EQ(*CallFunction("range", Positional({Value::Int(3)})),
            Value::List({Value::Int(0), Value::Int(1), Value::Int(2)}));
  EXPECT_EQ(*CallFunction("range", Positional({Value::Int(2), Value::Int(4)})),
            Value::List({Value::Int(2), Value::Int(3)}));
  EXPECT_FALSE(CallFunction("range", Positional({Value::Int(INT64_MAX)})));
}

TEST(Builtins, WrongArgumentCountsAreErrors) {
  EXPECT_FALSE(CallMethod(S("a"), "startswith", {}));
  EXPECT_FALSE(CallMethod(S("a"), "strip", Positional({S("a"), S("b")})));
  EXPECT_FALSE(ApplyFilter("replace", S("a"), Positional({S("a")})));
}

TEST(Builtins, NamesAreKnown) {
  EXPECT_TRUE(IsFilter("trim"));
  EXPECT_FALSE(IsFilter("safe"));
  EXPECT_TRUE(IsTest("defined"));
  EXPECT_FALSE(IsTest("divisibleby"));
  EXPECT_TRUE(IsFunction("raise_exception"));
  EXPECT_FALSE(IsFunction("lipsum"));
  EXPECT_TRUE(IsMethod("startswith"));
  EXPECT_FALSE(IsMethod("append"));
}

TEST(Builtins, CodePointOffsetsCountInvalidBytesSingly) {
  EXPECT_EQ(CodePointOffsets("aé😀"), (std::vector<size_t>{0, 1, 3}));
  EXPECT_EQ(CodePointOffsets("\xff\xc3"), (std::vector<size_t>{0, 1}));
}

}  // namespace
}  // namespace inferno::chat
