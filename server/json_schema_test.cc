#include "server/json_schema.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

using Json = nlohmann::ordered_json;

JsonSchema Compiled(const std::string& schema) {
  Result<JsonSchema> compiled = JsonSchema::Compile(Json::parse(schema), "schema");
  EXPECT_TRUE(compiled) << compiled.error().message;
  return compiled ? *compiled : JsonSchema::AnyObject();
}

// Whether `text` is accepted whole, fed in one piece and character by character alike.
std::string Verdict(const JsonSchema& schema, const std::string& text) {
  JsonSchemaMatcher whole(schema), chars(schema);
  const bool fed = whole.Feed(text);
  bool fed_chars = true;
  for (char c : text) fed_chars = fed_chars && chars.Feed(std::string(1, c));
  EXPECT_EQ(fed, fed_chars) << text;
  if (!fed) return "refused";
  EXPECT_EQ(whole.Complete(), chars.Complete()) << text;
  return whole.Complete() ? "complete" : "prefix";
}

const char kPerson[] = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 5}, "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"enum": ["a", "b", 1, 12]}, "maxItems": 2},
    "ok": {"type": "boolean"}, "score": {"type": "number"}},
    "required": ["name", "ok"], "additionalProperties": false})";

TEST(JsonSchemaMatcher, ObjectsInSchemaOrderWithRequiredProperties) {
  const JsonSchema schema = Compiled(kPerson);
  EXPECT_EQ(Verdict(schema, R"({"name": "Ann", "age": -12, "ok": true})"), "complete");
  EXPECT_EQ(Verdict(schema, R"({"name":"Ann","tags":[1,12],"ok":false,"score":-0.5e+3})"), "complete");
  EXPECT_EQ(Verdict(schema, R"({"name": "Ann", "ok": true, "score": 3)"), "prefix");
  EXPECT_EQ(Verdict(schema, R"({"name": "Ann")"), "prefix");
  // A required property skipped, an unknown one, the wrong order.
  EXPECT_EQ(Verdict(schema, R"({"age": 3)"), "refused");
  EXPECT_EQ(Verdict(schema, R"({"name": "A", "x)"), "refused");
  EXPECT_EQ(Verdict(schema, R"({"name": "A", "ok": true, "age)"), "refused");
  EXPECT_EQ(Verdict(schema, R"({"name": "A"})"), "refused");
}

TEST(JsonSchemaMatcher, ValuesOfTheWrongTypeOrOutOfBoundsAreRefused) {
  const JsonSchema schema = Compiled(kPerson);
  EXPECT_EQ(Verdict(schema, R"({"name": 3)"), "refused");
  EXPECT_EQ(Verdict(schema, R"({"name": "abcdef")"), "refused") << "maxLength 5";
  EXPECT_EQ(Verdict(schema, R"({"name": "a", "age": 1.5)"), "refused") << "an integer";
  EXPECT_EQ(Verdict(schema, R"({"name": "a", "age": 01)"), "refused");
  EXPECT_EQ(Verdict(schema, R"({"name": "a", "tags": ["c")"), "refused") << "not in the enum";
  EXPECT_EQ(Verdict(schema, R"({"name": "a", "tags": ["a", "b", "a")"), "refused") << "maxItems 2";
  EXPECT_EQ(Verdict(schema, R"({"name": "a", "tags": [123)"), "refused");
  EXPECT_EQ(Verdict(schema, R"({"name": "a",  "ok")"), "refused") << "one space at most";
  EXPECT_EQ(Verdict(schema, "{\"name\": \"a\nb\""), "refused") << "a control character in a string";
  EXPECT_EQ(Verdict(schema, R"({"name": "a\q")"), "refused");
  EXPECT_EQ(Verdict(schema, R"({"name": "\u00e9\"", "ok": true} )"), "refused") << "nothing after the end";
}

TEST(JsonSchemaMatcher, StringsCountCharactersAndTakeEscapesAndUtf8) {
  const JsonSchema schema = Compiled(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_EQ(Verdict(schema, "\"\xC3\xA9\\n\\u00e9\""), "complete");
  EXPECT_EQ(Verdict(schema, R"("a")"), "refused") << "minLength 2";
  EXPECT_EQ(Verdict(schema, "\"\xC3\""), "refused") << "a cut UTF-8 character";
}

TEST(JsonSchemaMatcher, AnyObjectForJsonObjectMode) {
  const JsonSchema schema = JsonSchema::AnyObject();
  EXPECT_EQ(Verdict(schema, R"({"a": [1, {"b": null}, "x", -2.5E-3, true], "c": {}})"), "complete");
  EXPECT_EQ(Verdict(schema, R"([1])"), "refused");
  EXPECT_EQ(Verdict(schema, R"({"a": tru)"), "prefix");
  EXPECT_EQ(Verdict(schema, R"({"a": trux)"), "refused");
}

TEST(JsonSchemaMatcher, ANumberAtTheTopIsCompleteWhereItCouldStop) {
  const JsonSchema schema = Compiled(R"({"type": "number"})");
  EXPECT_EQ(Verdict(schema, "-"), "prefix");
  EXPECT_EQ(Verdict(schema, "12"), "complete");
  EXPECT_EQ(Verdict(schema, "12."), "prefix");
  EXPECT_EQ(Verdict(schema, "1e"), "prefix");
  EXPECT_EQ(Verdict(Compiled(R"({"enum": [1, 12]})"), "1"), "complete");
}

TEST(JsonSchema, UnsupportedOrMalformedKeywordsAreNamed) {
  const auto error = [](const std::string& schema) {
    Result<JsonSchema> compiled =
        JsonSchema::Compile(Json::parse(schema), "response_format.json_schema.schema");
    return compiled ? "no error" : compiled.error().message;
  };
  EXPECT_EQ(error(R"({"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}})"),
            "'response_format.json_schema.schema/properties/age': unsupported keyword 'minimum'");
  EXPECT_EQ(error(R"({"anyOf": []})"), "'response_format.json_schema.schema': unsupported keyword 'anyOf'");
  EXPECT_EQ(error(R"({"type": ["string", "null"]})"),
            "'response_format.json_schema.schema': 'type' must be one of object, array, string, number, "
            "integer, boolean, null");
  EXPECT_EQ(error(R"({"type": "object", "properties": {}, "required": ["x"]})"),
            "'response_format.json_schema.schema': 'required' names \"x\", which 'properties' does not hold");
  EXPECT_EQ(error(R"({"type": "object", "additionalProperties": true})"),
            "'response_format.json_schema.schema': 'additionalProperties' is supported only as false");
  EXPECT_EQ(error(R"({"type": "string", "maxItems": 2})"),
            "'response_format.json_schema.schema': a keyword of another type than 'type' says");
}

}  // namespace
}  // namespace inferno
