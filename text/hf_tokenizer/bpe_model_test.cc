#include "text/hf_tokenizer/bpe_model.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno::hf {
namespace {

std::vector<int32_t> EncodeWord(const BpeModel& model, std::string_view word) {
  std::vector<int32_t> ids;
  model.Encode(word, ids);
  return ids;
}

// a=0 b=1 c=2 ab=3 bc=4 abc=5; merges: "b c" before "a b".
std::unique_ptr<BpeModel> SmallModel(const BpeOptions& options) {
  PieceIds vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}};
  Result<std::unique_ptr<BpeModel>> model =
      BpeModel::Create(vocab, {{"b", "c"}, {"a", "bc"}, {"a", "b"}}, options);
  EXPECT_TRUE(model) << model.error().ToString();
  return model ? std::move(*model) : nullptr;
}

TEST(BpeModel, AppliesTheLowestRankedMergeFirst) {
  auto model = SmallModel({});
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(EncodeWord(*model, "abc"), (std::vector<int32_t>{5}));      // b+c, then a+bc
  EXPECT_EQ(EncodeWord(*model, "abab"), (std::vector<int32_t>{3, 3}));  // no "b a" merge
  EXPECT_EQ(EncodeWord(*model, "cab"), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(EncodeWord(*model, "abc"), (std::vector<int32_t>{5}));  // from the cache
}

TEST(BpeModel, UnknownCharactersFuseIntoOneUnkOrAreDropped) {
  BpeOptions options;
  EXPECT_EQ(EncodeWord(*SmallModel(options), "axxb"), (std::vector<int32_t>{3}));  // "ab" once x is dropped
  options.unk_id = 2;
  EXPECT_EQ(EncodeWord(*SmallModel(options), "axxb"), (std::vector<int32_t>{0, 2, 2, 1}));
  options.fuse_unk = true;
  EXPECT_EQ(EncodeWord(*SmallModel(options), "axxb"), (std::vector<int32_t>{0, 2, 1}));
}

TEST(BpeModel, ByteFallbackSplitsAMissingCharacterIntoByteTokens) {
  PieceIds vocab = {{"a", 0}, {"<0xC3>", 1}, {"<0xA9>", 2}};
  BpeOptions options;
  options.byte_fallback = true;
  auto model = BpeModel::Create(vocab, {}, options);
  ASSERT_TRUE(model);
  EXPECT_EQ(EncodeWord(**model, "aé"), (std::vector<int32_t>{0, 1, 2}));
}

TEST(BpeModel, IgnoreMergesTakesAWholeWordFromTheVocabulary) {
  PieceIds vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"abc", 4}};
  BpeOptions options;
  options.ignore_merges = true;
  auto model = BpeModel::Create(vocab, {{"a", "b"}}, options);
  ASSERT_TRUE(model);
  EXPECT_EQ(EncodeWord(**model, "abc"), (std::vector<int32_t>{4}));
  EXPECT_EQ(EncodeWord(**model, "abb"), (std::vector<int32_t>{3, 1}));
}

TEST(BpeModel, MergeOfUnknownPiecesIsCorruptionNamingItsRank) {
  PieceIds vocab = {{"a", 0}, {"b", 1}};
  auto model = BpeModel::Create(vocab, {{"a", "b"}}, {});
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().kind, ErrorKind::kCorruption);
  EXPECT_NE(model.error().message.find("merge 0"), std::string::npos);
}

TEST(BpeModel, WordsCutWhereNoMergeJoinsGiveTheSameIds) {
  // "▁" only ever joins to what follows it, so "▁ab▁ab" is cut before the
  // second "▁"; "a" + "b▁" shows a merge across a cut candidate is respected.
  PieceIds vocab = {{"▁", 0}, {"a", 1}, {"b", 2}, {"▁a", 3}, {"▁ab", 4}, {"b▁", 5}, {"ab▁", 6}};
  auto model = BpeModel::Create(vocab, {{"▁", "a"}, {"▁a", "b"}}, {});
  ASSERT_TRUE(model);
  EXPECT_EQ(EncodeWord(**model, "▁ab▁ab"), (std::vector<int32_t>{4, 4}));
  auto joining = BpeModel::Create(vocab, {{"b", "▁"}, {"a", "b▁"}, {"▁", "a"}}, {});
  ASSERT_TRUE(joining);
  EXPECT_EQ(EncodeWord(**joining, "ab▁a"), (std::vector<int32_t>{6, 1}));
}

TEST(BpeModel, LongWordsAreEncodedWithoutTheCache) {
  PieceIds vocab = {{"a", 0}, {"aa", 1}};
  auto model = BpeModel::Create(vocab, {{"a", "a"}}, {});
  ASSERT_TRUE(model);
  const std::string word(BpeModel::kMaxCachedWordBytes * 4 + 1, 'a');
  const std::vector<int32_t> ids = EncodeWord(**model, word);
  ASSERT_EQ(ids.size(), word.size() / 2 + 1);
  EXPECT_EQ(ids.back(), 0);
}

}  // namespace
}  // namespace inferno::hf
