#include "server/json_constraint.h"

#include <cmath>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using Json = nlohmann::ordered_json;

constexpr int32_t kStop = 2;

// The byte tokenizer's id of byte `c`.
int32_t Id(char c) { return ByteTokenizer::kFirstByteId + static_cast<unsigned char>(c); }

std::shared_ptr<const std::vector<std::string>> Texts() {
  static const auto texts = std::make_shared<const std::vector<std::string>>(
      TokenTexts(ByteTokenizer(), ByteTokenizer::kVocabSize));
  return texts;
}

// The ids Mask leaves.
std::vector<int32_t> Allowed(JsonConstraint& constraint) {
  std::vector<float> logits(ByteTokenizer::kVocabSize, 0.0f);
  constraint.Mask(logits);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isfinite(logits[i])) ids.push_back(static_cast<int32_t>(i));
  }
  return ids;
}

TEST(JsonConstraint, LeavesOnlyTokensThatKeepTheTextValidThenOnlyStop) {
  Result<JsonSchema> schema = JsonSchema::Compile(Json::parse(R"({"enum": [true, "no"]})"), "s");
  ASSERT_TRUE(schema);
  JsonConstraint constraint(Texts(), {kStop}, *schema);
  EXPECT_EQ(Allowed(constraint), (std::vector<int32_t>{Id('"'), Id('t')}));
  for (char c : std::string("tru")) constraint.Accept(Id(c));
  EXPECT_EQ(Allowed(constraint), std::vector<int32_t>{Id('e')});
  EXPECT_FALSE(constraint.Complete());
  constraint.Accept(Id('e'));
  EXPECT_TRUE(constraint.Complete());
  EXPECT_EQ(Allowed(constraint), std::vector<int32_t>{kStop});
}

TEST(JsonConstraint, PrefixAndSuffixAroundTheDocument) {
  Result<JsonSchema> schema = JsonSchema::Compile(Json::parse(R"({"type": "integer"})"), "s");
  ASSERT_TRUE(schema);
  JsonConstraint constraint(Texts(), {kStop}, *schema, "<a>", "</a>");
  EXPECT_EQ(Allowed(constraint), std::vector<int32_t>{Id('<')});
  for (char c : std::string("<a>4")) constraint.Accept(Id(c));
  // More digits, or the suffix; not the stop yet.
  const std::vector<int32_t> allowed = Allowed(constraint);
  EXPECT_EQ(allowed.size(), 11u);
  EXPECT_EQ(allowed.front(), Id('0'));
  EXPECT_EQ(allowed.back(), Id('<'));
  for (char c : std::string("2</a")) constraint.Accept(Id(c));
  EXPECT_EQ(Allowed(constraint), std::vector<int32_t>{Id('>')});
  constraint.Accept(Id('>'));
  EXPECT_TRUE(constraint.Complete());
  EXPECT_EQ(Allowed(constraint), std::vector<int32_t>{kStop});
}

TEST(JsonConstraint, TokensThatPrintNothingAreNeverLeft) {
  JsonConstraint constraint(Texts(), {kStop}, JsonSchema::AnyObject());
  for (int32_t id : Allowed(constraint)) EXPECT_FALSE((*Texts())[id].empty()) << id;
}

}  // namespace
}  // namespace inferno
