// HfTokenizer on the real Llama 3, Qwen 3 and Mistral tokenizer.json files
// against golden encodings and decodings from an independent implementation
// (testdata/*_golden.json, written by make_golden.mjs with @lenml/tokenizers,
// recording which tokenizer package they came from).
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "text/hf_tokenizer/hf_tokenizer.h"
#include "text/hf_tokenizer/real_tokenizers.h"
#include "text/hf_tokenizer/streaming_decoder.h"
#include "text/utf8.h"

namespace inferno {
namespace {

// Loads each tokenizer once for all tests (a load parses a 9 MB file).
const HfTokenizer* LoadOnce(const std::string& path) {
  static std::map<std::string, std::unique_ptr<HfTokenizer>> loaded;
  auto it = loaded.find(path);
  if (it != loaded.end()) return it->second.get();
  Result<std::unique_ptr<HfTokenizer>> tokenizer = HfTokenizer::Load(path);
  if (!tokenizer) {
    ADD_FAILURE() << tokenizer.error().ToString();
    return nullptr;
  }
  return loaded.emplace(path, std::move(*tokenizer)).first->second.get();
}

class GoldenTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::optional<std::string> path = hf::FindRealTokenizer(GetParam());
    if (!path) {
      GTEST_SKIP() << GetParam() << "'s tokenizer.json is not in " << hf::RealTokenizersDir()
                   << " (run tools/fetch_tokenizers.sh)";
    }
    tokenizer_ = LoadOnce(*path);
    ASSERT_NE(tokenizer_, nullptr);
    std::ifstream in("text/hf_tokenizer/testdata/" + GetParam() + "_golden.json");
    ASSERT_TRUE(in) << "golden file for " << GetParam();
    golden_ = nlohmann::json::parse(in);
  }

  const HfTokenizer* tokenizer_ = nullptr;
  nlohmann::json golden_;
};

// The golden was written from the tokenizer package tools/fetch_tokenizers.sh
// fetched (its sha256, recorded beside the files), not another version.
TEST_P(GoldenTest, WasWrittenFromTheFetchedPackage) {
  std::ifstream stamp(hf::RealTokenizersDir() + "/" + GetParam() + "/.sha256");
  std::string fetched;
  ASSERT_TRUE(stamp >> fetched) << "no .sha256 beside " << GetParam() << "'s files";
  EXPECT_EQ(golden_.at("provenance").at("tokenizer").at("sha256").get<std::string>(), fetched)
      << "rerun make_golden.mjs, or tools/fetch_tokenizers.sh";
}

TEST_P(GoldenTest, EncodeMatchesReference) {
  int passed = 0;
  for (const nlohmann::json& c : golden_.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    const std::vector<int32_t> expected = c.at("ids").get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer_->Encode(text), expected) << "text: \"" << text << "\"";
    passed += tokenizer_->Encode(text) == expected;
  }
  std::printf("%s: %d of %zu encodings match\n", GetParam().c_str(), passed, golden_.at("cases").size());
}

TEST_P(GoldenTest, DecodeMatchesReference) {
  int passed = 0;
  for (const nlohmann::json& c : golden_.at("cases")) {
    const std::vector<int32_t> ids = c.at("ids").get<std::vector<int32_t>>();
    const std::string expected = c.at("decoded").get<std::string>();
    const std::string decoded = tokenizer_->DecodeIds(ids, /*skip_special_tokens=*/false);
    EXPECT_EQ(decoded, expected) << "text: \"" << c.at("text").get<std::string>() << "\"";
    passed += decoded == expected;
  }
  std::printf("%s: %d of %zu decodings match\n", GetParam().c_str(), passed, golden_.at("cases").size());
}

TEST_P(GoldenTest, StreamedChunksAreWholeCharactersAndJoinToTheText) {
  for (const nlohmann::json& c : golden_.at("cases")) {
    hf::StreamingDecoder stream(*tokenizer_, /*skip_special_tokens=*/false);
    std::string joined;
    for (int32_t id : c.at("ids").get<std::vector<int32_t>>()) {
      const std::string chunk = stream.Push(id);
      EXPECT_EQ(Utf8Lossy(chunk), chunk) << "chunk splits a character in \"" << c.at("text") << "\"";
      joined += chunk;
    }
    joined += stream.Finish();
    EXPECT_EQ(joined, c.at("decoded").get<std::string>());
  }
}

TEST_P(GoldenTest, SpecialTokensAddedLikeTheReference) {
  EXPECT_EQ(tokenizer_->EncodeWithSpecialTokens("Hello"),
            golden_.at("encode_hello_with_special_tokens").get<std::vector<int32_t>>());
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, GoldenTest, testing::Values("llama3", "qwen3", "mistral", "gemma3"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace inferno
