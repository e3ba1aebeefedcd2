#include "text/gguf_tokenizer.h"

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/testing/shared_models.h"
#include "loader/gguf_format.h"
#include "text/hf_tokenizer/hf_tokenizer.h"
#include "text/hf_tokenizer/real_tokenizers.h"

namespace inferno {
namespace {

// `vocabulary` written into a GGUF header and read back, as a file's
// tokenizer is.
Result<GgufVocabulary> ThroughGguf(const GgufVocabulary& vocabulary) {
  const std::string bytes = EncodeGgufHeader(GgufVocabularyMetadata(vocabulary), {}, kGgufDefaultAlignment);
  Result<GgufFile> file = ParseGgufFile(std::as_bytes(std::span(bytes.data(), bytes.size())), "t.gguf");
  if (!file) return file.error();
  return ReadGgufVocabulary(*file, "t.gguf");
}

TEST(GgufTokenizer, GivesTheTokenizerBinIdsAndText) {
  const std::optional<std::string> path = FindSharedModel("tokenizer.bin", "text/BUILD");
  if (!path) GTEST_SKIP() << "../shared/models/tokenizer.bin not found; skipping";
  Result<std::unique_ptr<BpeTokenizer>> reference = BpeTokenizer::Load(*path);
  ASSERT_TRUE(reference) << reference.error().message;
  const GgufVocabulary vocabulary = GgufVocabularyOf(**reference);
  EXPECT_EQ(vocabulary.tokens[29871], "\xE2\x96\x81");  // SentencePiece's space piece
  EXPECT_EQ(vocabulary.token_types[1], static_cast<int32_t>(GgufTokenType::kControl));
  EXPECT_EQ(vocabulary.token_types[3 + 'A'], static_cast<int32_t>(GgufTokenType::kByte));
  Result<GgufVocabulary> read = ThroughGguf(vocabulary);
  ASSERT_TRUE(read) << read.error().message;
  Result<std::unique_ptr<Tokenizer>> tokenizer = MakeGgufTokenizer(*read, "t.gguf");
  ASSERT_TRUE(tokenizer) << tokenizer.error().message;
  EXPECT_EQ((*tokenizer)->vocab_size(), 32000);
  for (const char* text :
       {"I believe the meaning of life is", "Once upon a time, there was a little girl named Lily.",
        "  two spaces, tabs\tand \xE2\x96\x81 a literal piece", "\xF0\x9F\x98\x80 emoji and \xC3\xA9", "x"}) {
    const std::vector<int32_t> ids = (*tokenizer)->Encode(text);
    EXPECT_EQ(ids, (*reference)->Encode(text)) << text;
    std::string decoded, expected;
    int32_t previous = kLlama2cBosId;
    for (int32_t id : ids) {
      decoded += (*tokenizer)->Decode(previous, id);
      expected += (*reference)->Decode(previous, id);
      previous = id;
    }
    EXPECT_EQ(decoded, expected) << text;
  }
}

TEST(GgufTokenizer, ByteFallbackVocabularyEncodesBytes) {
  Result<GgufVocabulary> read = ThroughGguf(ByteFallbackVocabulary(300));
  ASSERT_TRUE(read) << read.error().message;
  Result<std::unique_ptr<Tokenizer>> tokenizer = MakeGgufTokenizer(*read, "t.gguf");
  ASSERT_TRUE(tokenizer) << tokenizer.error().message;
  EXPECT_EQ((*tokenizer)->vocab_size(), 300);
  EXPECT_EQ((*tokenizer)->Encode("hi"), (std::vector<int32_t>{3 + 'h', 3 + 'i'}));
  EXPECT_EQ((*tokenizer)->Decode(3 + 'h', 3 + 'i'), "i");
}

// The gpt2 vocabulary llama.cpp's converter makes of a tokenizer.json:
// tokens by id (added special tokens typed control, other added tokens
// user-defined), merges as "left right".
GgufVocabulary Gpt2VocabularyOf(const std::string& path, const std::string& pre) {
  std::ifstream file(path);
  const nlohmann::json json = nlohmann::json::parse(file);
  GgufVocabulary vocabulary;
  vocabulary.model = kGgufGpt2Tokenizer;
  vocabulary.pre = pre;
  auto put = [&](int64_t id, const std::string& token, GgufTokenType type) {
    if (static_cast<int64_t>(vocabulary.tokens.size()) <= id) {
      vocabulary.tokens.resize(static_cast<size_t>(id) + 1);
      vocabulary.token_types.resize(static_cast<size_t>(id) + 1,
                                    static_cast<int32_t>(GgufTokenType::kUnused));
    }
    vocabulary.tokens[static_cast<size_t>(id)] = token;
    vocabulary.token_types[static_cast<size_t>(id)] = static_cast<int32_t>(type);
  };
  for (const auto& [token, id] : json["model"]["vocab"].items())
    put(id.get<int64_t>(), token, GgufTokenType::kNormal);
  for (const nlohmann::json& added : json["added_tokens"]) {
    put(added["id"].get<int64_t>(), added["content"].get<std::string>(),
        added["special"].get<bool>() ? GgufTokenType::kControl : GgufTokenType::kUserDefined);
  }
  for (const nlohmann::json& merge : json["model"]["merges"]) {
    vocabulary.merges.push_back(merge.is_string()
                                    ? merge.get<std::string>()
                                    : merge[0].get<std::string>() + " " + merge[1].get<std::string>());
  }
  return vocabulary;
}

TEST(GgufTokenizer, Gpt2ModelGivesTheTokenizerJsonIds) {
  // Llama 3's file (llama-bpe: its Split regex, merges ignored for whole
  // words). Qwen 3's ("qwen2": NFC, another regex) passed the same checks
  // when qwen2 was added, but doubles this test's 40 s in a fastbuild, so
  // it is not repeated here.
  const std::string name = "llama3", pre = "llama-bpe";
  const std::optional<std::string> path = hf::FindRealTokenizer(name);
  if (!path) GTEST_SKIP() << name << " tokenizer.json absent (tools/fetch_tokenizers.sh)";
  Result<std::unique_ptr<HfTokenizer>> reference = HfTokenizer::Load(*path);
  ASSERT_TRUE(reference) << reference.error().message;
  Result<GgufVocabulary> read = ThroughGguf(Gpt2VocabularyOf(*path, pre));
  ASSERT_TRUE(read) << read.error().message;
  Result<std::unique_ptr<Tokenizer>> tokenizer = MakeGgufTokenizer(*read, "t.gguf");
  ASSERT_TRUE(tokenizer) << tokenizer.error().message;
  EXPECT_EQ((*tokenizer)->vocab_size(), (*reference)->vocab_size()) << name;
  for (const char* text :
       {"Hello world! It's 2024, isn't it?", "  leading spaces\n\nand 12345 digits",
        "caf\xC3\xA9 na\xC3\xAFve \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80", "<|endoftext|> special text"}) {
    const std::vector<int32_t> ids = (*tokenizer)->Encode(text);
    EXPECT_EQ(ids, (*reference)->Encode(text)) << name << ": " << text;
    std::string decoded, expected;
    int32_t previous = -1;
    for (int32_t id : ids) {
      decoded += (*tokenizer)->Decode(previous, id);
      expected += (*reference)->Decode(previous, id);
      previous = id;
    }
    EXPECT_EQ(decoded, expected) << name << ": " << text;
  }
}

TEST(GgufTokenizer, RefusesUnknownPreTokenizerNamingIt) {
  GgufVocabulary vocabulary;
  vocabulary.model = kGgufGpt2Tokenizer;
  vocabulary.tokens = {"a", "b"};
  vocabulary.merges = {"a b"};
  vocabulary.pre = "deepseek-llm";
  Result<std::unique_ptr<Tokenizer>> tokenizer = MakeGgufTokenizer(vocabulary, "t.gguf");
  ASSERT_FALSE(tokenizer);
  EXPECT_NE(tokenizer.error().message.find("t.gguf: GGUF tokenizer pre-tokenizer 'deepseek-llm'"),
            std::string::npos);
}

TEST(GgufTokenizer, RefusesAnotherModelNamingIt) {
  GgufVocabulary vocabulary = ByteFallbackVocabulary(259);
  vocabulary.model = "bert";
  Result<std::unique_ptr<Tokenizer>> tokenizer = MakeGgufTokenizer(vocabulary, "t.gguf");
  ASSERT_FALSE(tokenizer);
  EXPECT_NE(tokenizer.error().message.find("t.gguf: GGUF tokenizer model 'bert'"), std::string::npos);
}

TEST(GgufTokenizer, RefusesByteTokensElsewhere) {
  GgufVocabulary vocabulary = ByteFallbackVocabulary(259);
  std::swap(vocabulary.tokens[3], vocabulary.tokens[4]);
  Result<std::unique_ptr<Tokenizer>> tokenizer = MakeGgufTokenizer(vocabulary, "t.gguf");
  ASSERT_FALSE(tokenizer);
  EXPECT_NE(tokenizer.error().message.find("without <0x00> at id 3"), std::string::npos);
}

TEST(GgufVocabulary, FailsOnArraysOfAnotherLength) {
  GgufVocabulary vocabulary = ByteFallbackVocabulary(259);
  vocabulary.scores.pop_back();
  Result<GgufVocabulary> read = ThroughGguf(vocabulary);
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("'tokenizer.ggml.scores' has 258 elements, not one per token (259)"),
            std::string::npos)
      << read.error().message;
}

TEST(GgufVocabulary, FailsOnSpecialIdOutsideTheVocabulary) {
  GgufVocabulary vocabulary = ByteFallbackVocabulary(259);
  vocabulary.eos_id = 259;
  Result<GgufVocabulary> read = ThroughGguf(vocabulary);
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("'tokenizer.ggml.eos_token_id' is not a token id"), std::string::npos);
}

}  // namespace
}  // namespace inferno
