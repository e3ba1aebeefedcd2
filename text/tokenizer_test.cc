#include "text/tokenizer.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/testing/shared_models.h"

namespace inferno {
namespace {

struct Piece {
  std::string text;
  float score;
};

// A llama2.c-format tokenizer file: specials, 256 byte-fallback pieces, then
// `extra` pieces.
std::string WriteTokenizerFile(const std::string& name, const std::vector<Piece>& extra) {
  std::vector<Piece> pieces = {{"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}};
  for (int byte = 0; byte < 256; ++byte) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", byte);
    pieces.push_back({text, 0});
  }
  pieces.insert(pieces.end(), extra.begin(), extra.end());
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream out(path, std::ios::binary);
  int32_t max_length = 16;
  out.write(reinterpret_cast<const char*>(&max_length), 4);
  for (const Piece& piece : pieces) {
    const int32_t length = static_cast<int32_t>(piece.text.size());
    out.write(reinterpret_cast<const char*>(&piece.score), 4);
    out.write(reinterpret_cast<const char*>(&length), 4);
    out.write(piece.text.data(), length);
  }
  return path;
}

constexpr int32_t kFirstExtra = 259;

TEST(ByteTokenizer, EncodesBytesAtOffsetThreeAndDecodesBack) {
  ByteTokenizer tokenizer;
  const std::vector<int32_t> ids = tokenizer.Encode("Hi!");
  EXPECT_EQ(ids, (std::vector<int32_t>{'H' + 3, 'i' + 3, '!' + 3}));
  std::string text;
  for (int32_t id : ids) text += tokenizer.Decode(kLlama2cBosId, id);
  EXPECT_EQ(text, "Hi!");
  EXPECT_EQ(tokenizer.Decode(kLlama2cBosId, kLlama2cEosId), "");
  EXPECT_EQ(tokenizer.Decode(kLlama2cBosId, 3 + 0x07), "") << "a bell byte is not printable";
}

TEST(BpeTokenizer, MergesHighestScoringPairFirst) {
  // " ab" could merge as " a"+"b" or " "+"ab"; "ab" scores higher.
  const std::string path =
      WriteTokenizerFile("merge.bin", {{" ", -1}, {"a", -1}, {"b", -1}, {" a", -5}, {"ab", -2}, {" ab", -3}});
  auto tokenizer = BpeTokenizer::Load(path);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  EXPECT_EQ((*tokenizer)->Encode("ab"), (std::vector<int32_t>{kFirstExtra + 5}));
  EXPECT_EQ((*tokenizer)->Encode("ba"),
            (std::vector<int32_t>{kFirstExtra, kFirstExtra + 2, kFirstExtra + 1}));
  EXPECT_EQ((*tokenizer)->Encode(""), std::vector<int32_t>{});
}

TEST(BpeTokenizer, FallsBackToBytesForUnknownCodePoints) {
  const std::string path = WriteTokenizerFile("fallback.bin", {{" ", -1}, {"é", -1}});
  auto tokenizer = BpeTokenizer::Load(path);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  // "é" is in the vocabulary; "ü" (0xC3 0xBC) is not.
  EXPECT_EQ((*tokenizer)->Encode("éü"),
            (std::vector<int32_t>{kFirstExtra, kFirstExtra + 1, 0xC3 + 3, 0xBC + 3}));
  EXPECT_EQ((*tokenizer)->Decode(kFirstExtra, 'A' + 3), "A");
  EXPECT_EQ((*tokenizer)->Decode(kLlama2cBosId, kFirstExtra), "") << "leading space dropped after BOS";
  EXPECT_EQ((*tokenizer)->Decode(7, kFirstExtra), " ");
}

TEST(BpeTokenizer, TruncatedFileFailsNamingTheOffset) {
  const std::string path = WriteTokenizerFile("short.bin", {{"abc", 0}});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
  auto tokenizer = BpeTokenizer::Load(path);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_NE(tokenizer.error().message.find("truncated at byte offset"), std::string::npos)
      << tokenizer.error().message;
  EXPECT_FALSE(BpeTokenizer::Load(path + ".missing").ok());
}

// The Llama 2 vocabulary: ids as SentencePiece (and llama2.c) give them.
// llama2.c's merge loop as written there: each step scans every adjacent
// pair for the best score above -1e10 (the first on ties) and merges it.
// O(n^2); the reference for Encode's heap of pairs.
std::vector<int32_t> MergeLikeLlama2c(const BpeTokenizer& tokenizer, std::vector<int32_t> ids) {
  std::map<std::string, int32_t> id_of;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) id_of.emplace(tokenizer.pieces()[id], id);
  for (;;) {
    float best_score = -1e10f;
    int32_t best_id = -1;
    size_t best_index = 0;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto it = id_of.find(tokenizer.pieces()[ids[i]] + tokenizer.pieces()[ids[i + 1]]);
      if (it != id_of.end() && tokenizer.scores()[it->second] > best_score) {
        best_score = tokenizer.scores()[it->second];
        best_id = it->second;
        best_index = i;
      }
    }
    if (best_id < 0) return ids;
    ids[best_index] = best_id;
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(best_index) + 1);
  }
}

TEST(BpeTokenizer, MergesAsLlama2csLoopOnRandomVocabulariesAndTexts) {
  // Pieces over a 3-letter alphabet, with many equal scores (ties) and some
  // at or below -1e10 (never merged), so every rule of the loop is reached.
  std::mt19937 rng(5);
  for (int round = 0; round < 20; ++round) {
    std::vector<Piece> extra = {{" ", -1}, {"a", -1}, {"b", -1}, {"c", -1}};
    std::set<std::string> seen = {" ", "a", "b", "c"};
    const float scores[] = {-1, -2, -3, -2, -1e10f, -1e11f};
    while (extra.size() < 60) {
      std::string piece;
      const int length = 2 + static_cast<int>(rng() % 4);
      for (int i = 0; i < length; ++i) piece += " abc"[rng() % 4];
      if (seen.insert(piece).second) extra.push_back({piece, scores[rng() % std::size(scores)]});
    }
    auto tokenizer = BpeTokenizer::Load(WriteTokenizerFile("random.bin", extra));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
    std::string text;
    const int length = 1 + static_cast<int>(rng() % 200);
    for (int i = 0; i < length; ++i) text += " abc"[rng() % 4];
    const std::vector<int32_t> ids = (*tokenizer)->Encode(text);
    // The symbols before merging: the dummy space, then one per character.
    std::vector<int32_t> symbols = {kFirstExtra};
    for (char c : text) symbols.push_back(kFirstExtra + static_cast<int32_t>(std::string(" abc").find(c)));
    EXPECT_EQ(ids, MergeLikeLlama2c(**tokenizer, symbols)) << "round " << round << ": '" << text << "'";
  }
}

TEST(BpeTokenizer, MatchesLlama2EncodingsOnSharedTokenizer) {
  const std::optional<std::string> path = FindSharedModel("tokenizer.bin", "text/BUILD");
  if (!path) GTEST_SKIP() << "../shared/models/tokenizer.bin not found; skipping";
  auto tokenizer = BpeTokenizer::Load(*path);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  EXPECT_EQ((*tokenizer)->vocab_size(), 32000);
  EXPECT_EQ((*tokenizer)->Encode("I believe the meaning of life is"),
            (std::vector<int32_t>{306, 4658, 278, 6593, 310, 2834, 338}));
  EXPECT_EQ((*tokenizer)->Encode("Simply put, the theory of relativity states that "),
            (std::vector<int32_t>{3439, 17632, 1925, 29892, 278, 6368, 310, 14215, 537, 5922, 393, 29871}));
  const std::string text = "Once upon a time, there was a little girl named Lily.";
  const std::vector<int32_t> ids = (*tokenizer)->Encode(text);
  std::string decoded;
  int32_t previous = kLlama2cBosId;
  for (int32_t id : ids) {
    decoded += (*tokenizer)->Decode(previous, id);
    previous = id;
  }
  EXPECT_EQ(decoded, text);
  // A longer prompt (about 1,100 characters, repeating words) encodes as
  // llama2.c's loop does (which takes seconds at 10 times the length).
  std::string story;
  for (int i = 0; i < 10; ++i) story += text + " She liked to play " + std::to_string(i) + " games. ";
  const std::vector<std::string>& pieces = (*tokenizer)->pieces();
  const auto id_of = [&pieces](char c) {
    return static_cast<int32_t>(std::find(pieces.begin(), pieces.end(), std::string(1, c)) - pieces.begin());
  };
  std::vector<int32_t> symbols = {id_of(' ')};  // the dummy space
  for (char c : story) symbols.push_back(id_of(c));
  EXPECT_EQ((*tokenizer)->Encode(story), MergeLikeLlama2c(**tokenizer, symbols));
}

}  // namespace
}  // namespace inferno
