#include "text/chat_template/value.h"

#include <gtest/gtest.h>

namespace inferno::chat {
namespace {

TEST(Value, DefaultIsUndefinedAndFalse) {
  EXPECT_TRUE(Value().is_undefined());
  EXPECT_FALSE(Value().Truthy());
}

TEST(Value, TruthFollowsPython) {
  EXPECT_FALSE(Value::None().Truthy());
  EXPECT_FALSE(Value::Int(0).Truthy());
  EXPECT_TRUE(Value::Int(-1).Truthy());
  EXPECT_FALSE(Value::String("").Truthy());
  EXPECT_TRUE(Value::String("0").Truthy());
  EXPECT_FALSE(Value::List({}).Truthy());
  EXPECT_TRUE(Value::List({Value()}).Truthy());
  EXPECT_FALSE(Value::Dict({}).Truthy());
  EXPECT_TRUE(Value::Namespace({}).Truthy());
}

TEST(Value, EqualityComparesBooleansAsNumbersAndOtherKindsNever) {
  EXPECT_EQ(Value::Bool(true), Value::Int(1));
  EXPECT_FALSE(Value::String("") == Value::Bool(false));
  EXPECT_FALSE(Value::None() == Value());
  EXPECT_EQ(Value(), Value());
  EXPECT_EQ(Value::List({Value::Int(1), Value::String("a")}),
            Value::List({Value::Int(1), Value::String("a")}));
  EXPECT_FALSE(Value::List({Value::Int(1)}) == Value::List({Value::Int(2)}));
}

TEST(Value, DictsEqualRegardlessOfOrder) {
  const Value a = Value::Dict({{"x", Value::Int(1)}, {"y", Value::Int(2)}});
  const Value b = Value::Dict({{"y", Value::Int(2)}, {"x", Value::Int(1)}});
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == Value::Dict({{"x", Value::Int(1)}}));
}

TEST(Value, DuplicateKeysKeepTheFirstPlaceAndTheLastValue) {
  const Value dict = Value::Dict({{"a", Value::Int(1)}, {"b", Value::Int(2)}, {"a", Value::Int(3)}});
  ASSERT_EQ(dict.as_dict().size(), 2u);
  EXPECT_EQ(dict.as_dict()[0].first, "a");
  EXPECT_EQ(dict.Get("a"), Value::Int(3));
  EXPECT_TRUE(dict.Get("missing").is_undefined());
  EXPECT_TRUE(Value::Int(1).Get("a").is_undefined());
}

TEST(Value, NamespaceAttributesAreSharedByCopies) {
  const Value ns = Value::Namespace({{"found", Value::Bool(false)}});
  const Value copy = ns;
  copy.SetAttribute("found", Value::Bool(true));
  copy.SetAttribute("index", Value::Int(4));
  EXPECT_EQ(ns.Get("found"), Value::Bool(true));
  EXPECT_EQ(ns.Get("index"), Value::Int(4));
  EXPECT_EQ(ns, copy);
  EXPECT_FALSE(ns == Value::Namespace({{"found", Value::Bool(true)}, {"index", Value::Int(4)}}));
}

TEST(Value, FunctionsAreTrueEqualByNameAndNeitherPrintedNorSerialized) {
  const Value function = Value::Function("strftime_now");
  EXPECT_EQ(function.kind(), Value::Kind::kFunction);
  EXPECT_TRUE(function.Truthy());
  EXPECT_EQ(function, Value::Function("strftime_now"));
  EXPECT_FALSE(function == Value::Function("range"));
  EXPECT_FALSE(function == Value::String("strftime_now"));
  EXPECT_EQ(ToText(function).error().kind, ErrorKind::kUnimplemented);
  EXPECT_FALSE(ToJson(function, 0));
}

TEST(Value, ToTextPrintsLikePythonStr) {
  EXPECT_EQ(*ToText(Value()), "");
  EXPECT_EQ(*ToText(Value::None()), "None");
  EXPECT_EQ(*ToText(Value::Bool(true)), "True");
  EXPECT_EQ(*ToText(Value::Int(-42)), "-42");
  EXPECT_EQ(*ToText(Value::String("héllo")), "héllo");
}

TEST(Value, ToTextRefusesContainers) {
  const Result<std::string> text = ToText(Value::List({Value::Int(1)}));
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().kind, ErrorKind::kUnimplemented);
}

TEST(Value, ToJsonUsesPythonSeparatorsAndKeepsUnicode) {
  const Value value = Value::Dict({{"name", Value::String("f\"\\\n\x01é")},
                                   {"args", Value::List({Value::Int(1), Value::Bool(false), Value::None()})},
                                   {"empty", Value::Dict({})}});
  EXPECT_EQ(*ToJson(value, 0), R"({"name": "f\"\\\n\u0001é", "args": [1, false, null], "empty": {}})");
}

TEST(Value, ToJsonIndentsOneItemPerLine) {
  const Value value =
      Value::Dict({{"a", Value::List({Value::Int(1), Value::Int(2)})}, {"b", Value::List({})}});
  EXPECT_EQ(*ToJson(value, 2), "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": []\n}");
}

TEST(Value, ToJsonRefusesUndefinedAndNamespaces) {
  EXPECT_FALSE(ToJson(Value(), 0));
  EXPECT_FALSE(ToJson(Value::List({Value::Namespace({})}), 0));
}

}  // namespace
}  // namespace inferno::chat
