#include "text/hf_tokenizer/hf_tokenizer.h"

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace inferno {
namespace {

using json = nlohmann::json;

// A SentencePiece-style file: ▁ prepended and for spaces, byte fallback,
// Mistral's decoder and a BOS template.
json SentencePieceFile() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    vocab[name] = 3 + byte;
  }
  int next = 259;
  for (const char* piece : {"▁", "h", "i", "hi", "▁hi", "▁h"}) vocab[piece] = next++;
  return {
      {"added_tokens",
       {{{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
        {{"id", 2}, {"content", "</s>"}, {"special", true}, {"normalized", false}}}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "▁"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"unk_token", "<unk>"},
        {"byte_fallback", true},
        {"fuse_unk", true},
        {"vocab", vocab},
        {"merges", {"h i", "▁ hi", "▁ h"}}}},
  };
}

// A byte-level file: the GPT-2 regex inside ByteLevel, merges as pairs.
json ByteLevelFile() {
  json vocab = json::object();
  for (int byte = '!'; byte <= '~'; ++byte) vocab[std::string(1, static_cast<char>(byte))] = byte;
  vocab["Ġ"] = 300;
  vocab["Ġh"] = 301;
  vocab["Ġhi"] = 302;
  return {
      {"added_tokens", {{{"id", 400}, {"content", "<|eot|>"}, {"special", true}, {"normalized", false}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", {{"type", "ByteLevel"}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"vocab", vocab},
        {"merges", json::array({json::array({"Ġ", "h"}), json::array({"Ġh", "i"})})}}},
  };
}

std::unique_ptr<HfTokenizer> MustParse(const json& file) {
  Result<std::unique_ptr<HfTokenizer>> tokenizer = HfTokenizer::Parse(file.dump(), "test.json");
  EXPECT_TRUE(tokenizer) << tokenizer.error().ToString();
  return tokenizer ? std::move(*tokenizer) : nullptr;
}

std::string ParseError(const json& file) {
  Result<std::unique_ptr<HfTokenizer>> tokenizer = HfTokenizer::Parse(file.dump(), "test.json");
  return tokenizer ? "" : tokenizer.error().ToString();
}

TEST(HfTokenizer, SentencePieceEncodesWithPrependedSpaceMergesAndByteFallback) {
  auto tokenizer = MustParse(SentencePieceFile());
  ASSERT_NE(tokenizer, nullptr);
  // "hi hi" -> "▁hi▁hi"; "é" is not in the vocabulary: bytes C3 A9.
  EXPECT_EQ(tokenizer->Encode("hi hi"), (std::vector<int32_t>{263, 263}));
  EXPECT_EQ(tokenizer->Encode("é"), (std::vector<int32_t>{259, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tokenizer->Encode("hi</s>"), (std::vector<int32_t>{263, 2}));
  EXPECT_EQ(tokenizer->Encode(""), std::vector<int32_t>{});
}

TEST(HfTokenizer, SentencePieceTemplateAddsBos) {
  auto tokenizer = MustParse(SentencePieceFile());
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_TRUE(tokenizer->adds_bos());
  EXPECT_EQ(tokenizer->bos_id(), 1);
  EXPECT_EQ(tokenizer->EncodeWithSpecialTokens("hi"), (std::vector<int32_t>{1, 263}));
  EXPECT_EQ(tokenizer->TokenId("</s>"), 2);
  EXPECT_EQ(tokenizer->TokenId("▁hi"), 263);
  EXPECT_EQ(tokenizer->TokenId("nope"), std::nullopt);
  EXPECT_TRUE(tokenizer->IsSpecial(2));
  EXPECT_EQ(tokenizer->vocab_size(), 265);
}

TEST(HfTokenizer, DecodeDropsTheLeadingSpaceAfterBosAndSkipsSpecialTokens) {
  auto tokenizer = MustParse(SentencePieceFile());
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->Decode(1, 263), "hi");
  EXPECT_EQ(tokenizer->Decode(263, 263), " hi");
  EXPECT_EQ(tokenizer->Decode(263, 2), "");
  EXPECT_EQ(tokenizer->Decode(263, 99999), "");
  EXPECT_EQ(tokenizer->Decode(263, 3 + 0xC3), "\xC3");
  const std::vector<int32_t> ids = {1, 263, 259, 3 + 0xC3, 3 + 0xA9, 2};
  EXPECT_EQ(tokenizer->DecodeIds(ids, /*skip_special_tokens=*/true), "hi é");
  EXPECT_EQ(tokenizer->DecodeIds(ids, /*skip_special_tokens=*/false), "<s> hi é</s>");
}

TEST(HfTokenizer, ByteLevelEncodesRawBytesAndDecodesThemBack) {
  auto tokenizer = MustParse(ByteLevelFile());
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->Encode("a hi<|eot|>"), (std::vector<int32_t>{'a', 302, 400}));
  EXPECT_FALSE(tokenizer->adds_bos());
  EXPECT_EQ(tokenizer->DecodeIds(std::vector<int32_t>{'a', 302, 400}, false), "a hi<|eot|>");
  EXPECT_EQ(tokenizer->Decode('a', 302), " hi");
}

TEST(HfTokenizer, EncodesTheSameFromSeveralThreadsAtOnce) {
  auto tokenizer = MustParse(ByteLevelFile());
  ASSERT_NE(tokenizer, nullptr);
  std::string text;
  for (int i = 0; i < 200; ++i) text += "hi a" + std::to_string(i) + " hi\n";
  const std::vector<int32_t> expected = tokenizer->Encode(text);
  std::vector<std::vector<int32_t>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&] { result = tokenizer->Encode(text); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const auto& result : results) EXPECT_EQ(result, expected);
}

// Llama 3.x files from Hugging Face: Sequence[ByteLevel, TemplateProcessing].
TEST(HfTokenizer, PostProcessorSequenceWithTemplateAddsBos) {
  json file = ByteLevelFile();
  file["added_tokens"].push_back({{"id", 401}, {"content", "<|begin|>"}, {"special", true}});
  const json bos = {{"SpecialToken", {{"id", "<|begin|>"}, {"type_id", 0}}}};
  const json text = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  const json template_processing = {
      {"type", "TemplateProcessing"},
      {"single", json::array({bos, text})},
      {"special_tokens", {{"<|begin|>", {{"id", "<|begin|>"}, {"ids", {401}}}}}}};
  file["post_processor"] = {{"type", "Sequence"},
                            {"processors", json::array({{{"type", "ByteLevel"}}, template_processing})}};
  auto tokenizer = MustParse(file);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->bos_id(), 401);
  EXPECT_EQ(tokenizer->EncodeWithSpecialTokens("a"), (std::vector<int32_t>{401, 'a'}));
  EXPECT_EQ(tokenizer->Decode(401, 302), " hi");  // the ByteLevel decoder strips nothing
}

TEST(HfTokenizer, MalformedJsonIsOneLineCorruptionNamingTheFile) {
  const std::string text = SentencePieceFile().dump();
  for (size_t length : {size_t{0}, size_t{1}, text.size() / 2, text.size() - 1}) {
    Result<std::unique_ptr<HfTokenizer>> tokenizer = HfTokenizer::Parse(text.substr(0, length), "cut.json");
    ASSERT_FALSE(tokenizer) << length;
    EXPECT_EQ(tokenizer.error().kind, ErrorKind::kCorruption);
    EXPECT_TRUE(tokenizer.error().message.starts_with("cut.json: ")) << tokenizer.error().message;
    EXPECT_EQ(tokenizer.error().message.find('\n'), std::string::npos);
  }
}

TEST(HfTokenizer, FieldOfTheWrongTypeIsCorruption) {
  json file = SentencePieceFile();
  file["model"]["vocab"]["hi"] = "not a number";
  EXPECT_NE(ParseError(file).find("Corruption: test.json: "), std::string::npos) << ParseError(file);
  file = SentencePieceFile();
  file["model"]["merges"] = {"h i j"};
  EXPECT_NE(ParseError(file).find("model.merges[0]"), std::string::npos) << ParseError(file);
  file = SentencePieceFile();
  file["model"]["merges"] = {"x y"};
  EXPECT_NE(ParseError(file).find("merge 0"), std::string::npos) << ParseError(file);
}

TEST(HfTokenizer, SparseIdsAreCorruptionNotAHugeTable) {
  json file = SentencePieceFile();
  file["model"]["vocab"]["hi"] = 2000000000;
  EXPECT_NE(ParseError(file).find("largest token id 2000000000"), std::string::npos) << ParseError(file);
}

TEST(HfTokenizer, UnsupportedConstructsAreNamed) {
  struct Case {
    const char* pointer;
    json value;
    const char* named;
  };
  const std::vector<Case> cases = {
      {"/model/type", "Unigram", "model type \"Unigram\""},
      {"/model/type", "WordPiece", "model type \"WordPiece\""},
      {"/normalizer", {{"type", "Lowercase"}}, "normalizer type \"Lowercase\""},
      {"/pre_tokenizer", {{"type", "Whitespace"}}, "pre_tokenizer type \"Whitespace\""},
      {"/decoder", {{"type", "WordPiece"}}, "decoder type \"WordPiece\""},
      {"/post_processor", {{"type", "BertProcessing"}}, "post_processor type \"BertProcessing\""},
      {"/model/dropout", 0.1, "BPE dropout"},
      {"/truncation", {{"max_length", 8}}, "truncation"},
      // Names read from the file are quoted on one line, control characters as '?'.
      {"/model/type", "Uni\ngram", "model type \"Uni?gram\""},
      {"/normalizer", {{"type", "Lower\ncase"}}, "normalizer type \"Lower?case\""},
      {"/pre_tokenizer", {{"type", "White\rspace"}}, "pre_tokenizer type \"White?space\""},
      {"/decoder", {{"type", "Word\nPiece"}}, "decoder type \"Word?Piece\""},
      {"/model/unk_token", "<un\nk>", "model.unk_token \"<un?k>\""},
  };
  for (const Case& c : cases) {
    json file = SentencePieceFile();
    file[json::json_pointer(c.pointer)] = c.value;
    const std::string error = ParseError(file);
    EXPECT_NE(error.find("test.json: "), std::string::npos) << error;
    EXPECT_NE(error.find(c.named), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
}

TEST(HfTokenizer, MissingFileIsIoError) {
  Result<std::unique_ptr<HfTokenizer>> tokenizer = HfTokenizer::Load("/nonexistent/tokenizer.json");
  ASSERT_FALSE(tokenizer);
  EXPECT_EQ(tokenizer.error().kind, ErrorKind::kIo);
  EXPECT_NE(tokenizer.error().message.find("/nonexistent/tokenizer.json"), std::string::npos);
}

TEST(HfTokenizer, InvalidUtf8InputIsReadAsReplacementCharacter) {
  auto tokenizer = MustParse(ByteLevelFile());
  ASSERT_NE(tokenizer, nullptr);
  // U+FFFD is EF BF BD, none of which is in this small vocabulary: dropped.
  EXPECT_EQ(tokenizer->Encode("a\xFF"), (std::vector<int32_t>{'a'}));
}

}  // namespace
}  // namespace inferno
