#include "engine/gguf_tokenizer.h"

#include <gtest/gtest.h>

#include "base/testing/shared_models.h"
#include "loader/gguf_format.h"

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
  const std::optional<std::string> path = FindSharedModel("tokenizer.bin", "engine/BUILD");
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
  for (const char* text : {"I believe the meaning of life is", "Once upon a time, there was a little girl named Lily.",
                           "  two spaces, tabs\tand \xE2\x96\x81 a literal piece", "\xF0\x9F\x98\x80 emoji and \xC3\xA9",
                           "x"}) {
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

TEST(GgufTokenizer, RefusesGpt2ModelNamingIt) {
  GgufVocabulary vocabulary = ByteFallbackVocabulary(259);
  vocabulary.model = kGgufGpt2Tokenizer;
  Result<std::unique_ptr<Tokenizer>> tokenizer = MakeGgufTokenizer(vocabulary, "t.gguf");
  ASSERT_FALSE(tokenizer);
  EXPECT_NE(tokenizer.error().message.find("t.gguf: GGUF tokenizer model 'gpt2'"), std::string::npos);
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
