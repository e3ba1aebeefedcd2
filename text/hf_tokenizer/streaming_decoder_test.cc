#include "text/hf_tokenizer/streaming_decoder.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "text/hf_tokenizer/hf_tokenizer.h"

namespace inferno::hf {
namespace {

// Byte-fallback tokens <0x00>..<0xFF> are ids 0..255; "▁hi" is 256.
std::unique_ptr<HfTokenizer> ByteFallbackTokenizer() {
  std::string vocab = "{";
  for (int byte = 0; byte < 256; ++byte) {
    char entry[32];
    std::snprintf(entry, sizeof entry, "\"<0x%02X>\": %d, ", byte, byte);
    vocab += entry;
  }
  vocab += "\"▁hi\": 256, \"</s>\": 257}";
  const std::string file = R"({"added_tokens": [{"id": 257, "content": "</s>", "special": true}],
    "decoder": {"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
      {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "byte_fallback": true, "merges": [], "vocab": )" +
                           vocab + "}}";
  Result<std::unique_ptr<HfTokenizer>> tokenizer = HfTokenizer::Parse(file, "test.json");
  EXPECT_TRUE(tokenizer) << tokenizer.error().ToString();
  return tokenizer ? std::move(*tokenizer) : nullptr;
}

TEST(StreamingDecoder, HoldsBackAPartialCharacterUntilItIsComplete) {
  auto tokenizer = ByteFallbackTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  StreamingDecoder stream(*tokenizer, /*skip_special_tokens=*/true);
  EXPECT_EQ(stream.Push(256), "hi");  // the first token loses its space
  EXPECT_EQ(stream.Push(0xE4), "");   // 中 is E4 B8 AD
  EXPECT_EQ(stream.Push(0xB8), "");
  EXPECT_EQ(stream.Push(0xAD), "中");
  EXPECT_EQ(stream.Push(256), " hi");
  EXPECT_EQ(stream.Push(0xF0), "");  // 😀 is F0 9F 98 80
  EXPECT_EQ(stream.Push(0x9F), "");
  EXPECT_EQ(stream.Push(257), "");  // special: skipped
  EXPECT_EQ(stream.Push(0x98), "");
  EXPECT_EQ(stream.Push(0x80), "😀");
  EXPECT_EQ(stream.Finish(), "");
}

TEST(StreamingDecoder, InvalidBytesPrintAsReplacementCharacter) {
  auto tokenizer = ByteFallbackTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  StreamingDecoder stream(*tokenizer, /*skip_special_tokens=*/false);
  EXPECT_EQ(stream.Push(0xFF), "\uFFFD");
  EXPECT_EQ(stream.Push(0xE4), "");
  EXPECT_EQ(stream.Push('A'), "\uFFFDA");  // E4 cut short by 'A'
  EXPECT_EQ(stream.Push(0xE4), "");
  EXPECT_EQ(stream.Finish(), "\uFFFD");  // unfinished at the end
  EXPECT_EQ(stream.Push(257), "</s>");
}

TEST(StreamingDecoder, UnknownIdsPrintNothing) {
  auto tokenizer = ByteFallbackTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  StreamingDecoder stream(*tokenizer, /*skip_special_tokens=*/true);
  EXPECT_EQ(stream.Push(-1), "");
  EXPECT_EQ(stream.Push(100000), "");
  EXPECT_EQ(stream.Push(256), "hi");
}

}  // namespace
}  // namespace inferno::hf
