#include "runtime/prompt_lookup.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::vector<int32_t> Draft(const std::vector<int32_t>& tokens, int64_t k) {
  std::vector<int32_t> draft = {99};  // cleared first
  DraftByPromptLookup(tokens, k, draft);
  return draft;
}

TEST(PromptLookupTest, ProposesWhatFollowedTheLongestSuffixLastTime) {
  // The suffix (4, 5, 6) occurred at 1..3 and was followed by 7, 8, 9.
  EXPECT_EQ(Draft({3, 4, 5, 6, 7, 8, 9, 4, 5, 6}, 3), (std::vector<int32_t>{7, 8, 9}));
  EXPECT_EQ(Draft({3, 4, 5, 6, 7, 8, 9, 4, 5, 6}, 2), (std::vector<int32_t>{7, 8}));
}

TEST(PromptLookupTest, PrefersTheLongerMatchOverTheMoreRecentShorterOne) {
  // (1, 2, 3) occurred at 0 followed by 7; (2, 3) occurred later at 5,
  // followed by 5: the 3-gram wins.
  EXPECT_EQ(Draft({1, 2, 3, 7, 9, 2, 3, 5, 1, 2, 3}, 1), (std::vector<int32_t>{7}));
  // With no 3-gram match, the latest 2-gram.
  EXPECT_EQ(Draft({6, 2, 3, 7, 9, 2, 3, 5, 1, 2, 3}, 1), (std::vector<int32_t>{5}));
}

TEST(PromptLookupTest, ASingleTokenIsNotLookedUp) {
  // 2 occurred before, followed by 7, but no 2-token suffix did.
  EXPECT_TRUE(Draft({2, 7, 3, 2}, 2).empty());
}

TEST(PromptLookupTest, TakesTheMostRecentOccurrence) {
  EXPECT_EQ(Draft({1, 2, 3, 1, 2, 4, 1, 2}, 1), (std::vector<int32_t>{4}));
}

TEST(PromptLookupTest, ADraftPastTheEndRepeatsThePeriod) {
  // A run of one token: the latest match ends one token before the end.
  EXPECT_EQ(Draft({5, 5, 5, 5}, 4), (std::vector<int32_t>{5, 5, 5, 5}));
  EXPECT_EQ(Draft({1, 2, 1, 2}, 5), (std::vector<int32_t>{1, 2, 1, 2, 1}));
  EXPECT_EQ(Draft({4, 1, 2, 3, 1, 2}, 4), (std::vector<int32_t>{3, 1, 2, 3}));
}

TEST(PromptLookupTest, NothingWithoutAnEarlierOccurrenceOrRoom) {
  EXPECT_TRUE(Draft({1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(Draft({1}, 4).empty());
  EXPECT_TRUE(Draft({}, 4).empty());
  EXPECT_TRUE(Draft({1, 2, 1, 2}, 0).empty());
}

}  // namespace
}  // namespace inferno
