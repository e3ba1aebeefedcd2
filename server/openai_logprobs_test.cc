#include "server/openai_logprobs.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

using Json = nlohmann::json;

// The byte tokenizer's id of byte `c`.
int32_t Id(char c) { return ByteTokenizer::kFirstByteId + static_cast<unsigned char>(c); }

TEST(OpenAiLogprobs, ChatEntriesHoldTokenLogprobBytesAndAlternatives) {
  ByteTokenizer tokenizer;
  OpenAiLogprobs logprobs(tokenizer, /*chat=*/true);
  const std::vector<int32_t> tokens = {Id('H'), Id('i')};
  const std::vector<TokenLogprobs> entries = {{Id('H'), -0.25f, {{Id('H'), -0.25f}, {Id('J'), -2.0f}}},
                                              {Id('i'), -1.5f, {}}};
  const Json added = logprobs.Add(Id(' '), tokens, entries);
  EXPECT_EQ(added, Json::parse(R"({"content": [
      {"token": "H", "logprob": -0.25, "bytes": [72],
       "top_logprobs": [{"token": "H", "logprob": -0.25, "bytes": [72]},
                        {"token": "J", "logprob": -2.0, "bytes": [74]}]},
      {"token": "i", "logprob": -1.5, "bytes": [105], "top_logprobs": []}], "refusal": null})"));
  logprobs.Add(Id('i'), std::vector<int32_t>{Id('!')}, std::vector<TokenLogprobs>{{Id('!'), -0.5f, {}}});
  ASSERT_EQ(logprobs.total()["content"].size(), 3u);
  EXPECT_EQ(logprobs.total()["content"][2]["token"], "!");
  EXPECT_TRUE(logprobs.total()["refusal"].is_null());
}

TEST(OpenAiLogprobs, CompletionArraysAndTextOffsetsAcrossAdds) {
  ByteTokenizer tokenizer;
  OpenAiLogprobs logprobs(tokenizer, /*chat=*/false);
  logprobs.Add(Id(' '), std::vector<int32_t>{Id('a'), Id('b')},
               std::vector<TokenLogprobs>{{Id('a'), -1.0f, {{Id('a'), -1.0f}}}, {Id('b'), -2.0f, {}}});
  const Json added =
      logprobs.Add(Id('b'), std::vector<int32_t>{Id('c')}, std::vector<TokenLogprobs>{{Id('c'), -3.0f, {}}});
  EXPECT_EQ(added["text_offset"], Json::parse("[2]"));
  EXPECT_EQ(logprobs.total(), Json::parse(R"({"tokens": ["a", "b", "c"], "token_logprobs": [-1.0, -2.0, -3.0],
      "top_logprobs": [{"a": -1.0}, {}, {}], "text_offset": [0, 1, 2]})"));
}

}  // namespace
}  // namespace inferno
