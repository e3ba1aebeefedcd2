#include "server/continuation.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(Continuation, TakenFromTheBodyWhichIsLeftWithoutIt) {
  std::string body =
      R"({"model": "toy", "prompt": "Once", "inferno_continue": {"tokens": [5, 0, 31999], "id": "cmpl-4", )"
      R"("created": 17}})";
  Result<std::optional<Continuation>> taken = TakeContinuation(body);
  ASSERT_TRUE(taken.ok()) << taken.error().ToString();
  ASSERT_TRUE(taken->has_value());
  EXPECT_EQ((*taken)->tokens, (std::vector<int32_t>{5, 0, 31999}));
  EXPECT_EQ((*taken)->id, "cmpl-4");
  EXPECT_EQ((*taken)->created, 17);
  EXPECT_EQ(body, R"({"model":"toy","prompt":"Once"})");
}

TEST(Continuation, AbsentOrNotAnObjectLeavesTheBodyAlone) {
  std::string body = R"({"model": "toy"})";
  Result<std::optional<Continuation>> taken = TakeContinuation(body);
  ASSERT_TRUE(taken.ok());
  EXPECT_FALSE(taken->has_value());
  EXPECT_EQ(body, R"({"model": "toy"})");
  std::string broken = "{not json";
  ASSERT_TRUE(TakeContinuation(broken).ok());
  EXPECT_EQ(broken, "{not json");
}

TEST(Continuation, MalformedPartsAreNamed) {
  for (const auto& [body, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"({"inferno_continue": []})", "'inferno_continue' must be an object"},
           {R"({"inferno_continue": {"tokens": [1, -2]}})", "'inferno_continue.tokens' must be an array"},
           {R"({"inferno_continue": {"tokens": "1"}})", "'inferno_continue.tokens' must be an array"},
           {R"({"inferno_continue": {"id": 3}})", "'inferno_continue.id' must be a string"},
           {R"({"inferno_continue": {"more": 3}})", "unrecognized field 'inferno_continue.more'"}}) {
    std::string copy = body;
    Result<std::optional<Continuation>> taken = TakeContinuation(copy);
    ASSERT_FALSE(taken.ok()) << body;
    EXPECT_NE(taken.error().message.find(expected), std::string::npos) << taken.error().message;
  }
}

TEST(Continuation, WithContinuationRoundTrips) {
  Continuation continuation{{7, 8}, "chatcmpl-2", 99};
  Result<std::string> body = WithContinuation(R"({"model": "toy"})", continuation);
  ASSERT_TRUE(body.ok());
  std::string copy = *body;
  Result<std::optional<Continuation>> taken = TakeContinuation(copy);
  ASSERT_TRUE(taken.ok() && taken->has_value());
  EXPECT_EQ((*taken)->tokens, continuation.tokens);
  EXPECT_EQ((*taken)->id, continuation.id);
  EXPECT_EQ((*taken)->created, continuation.created);
  EXPECT_FALSE(WithContinuation("[1]", continuation).ok());
}

TEST(Continuation, TokenCommentsRoundTripAndOtherBlocksAreNotThem) {
  const std::vector<int32_t> tokens = {12, 0, 2045};
  const std::string comment = TokenComment(tokens);
  EXPECT_EQ(comment, ": inferno-tokens 12,0,2045\n\n");
  EXPECT_EQ(ParseTokenComment(comment), tokens);
  EXPECT_EQ(ParseTokenComment(": inferno-tokens 12,0,2045"), tokens);
  EXPECT_EQ(ParseTokenComment(TokenComment({})), std::vector<int32_t>{});
  EXPECT_FALSE(ParseTokenComment(": keep-alive\n\n").has_value());
  EXPECT_FALSE(ParseTokenComment("data: {}\n\n").has_value());
  EXPECT_FALSE(ParseTokenComment(": inferno-tokens 1,,2").has_value());
  EXPECT_FALSE(ParseTokenComment(": inferno-tokens 1,x").has_value());
}

}  // namespace
}  // namespace inferno
