#include "runtime/prefix_cache_index.h"

#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

constexpr int64_t B = kPrefixBlockPositions;
constexpr int64_t kBlockBytes = 1000;

// `blocks` whole blocks of ids from `first` on, then `extra` more ids.
std::vector<int32_t> Prompt(int64_t blocks, int32_t first = 0, int64_t extra = 1) {
  std::vector<int32_t> prompt(static_cast<size_t>(blocks * B + extra));
  std::iota(prompt.begin(), prompt.end(), first);
  return prompt;
}

TEST(PrefixCacheIndex, FirstSightFillsEveryWholeBlockAndRestoresNone) {
  PrefixCacheIndex index(8, kBlockBytes);
  const PrefixPlan plan = index.Admit(1, Prompt(3));
  EXPECT_TRUE(plan.restore.empty());
  EXPECT_EQ(plan.save.size(), 3u);
  EXPECT_EQ(index.stats().blocks_in_use, 3);
  EXPECT_EQ(index.stats().bytes_in_use, 3 * kBlockBytes);
  EXPECT_EQ(index.stats().hits, 0);
}

TEST(PrefixCacheIndex, PendingBlocksAreNotHitUntilPrefilled) {
  PrefixCacheIndex index(8, kBlockBytes);
  const PrefixPlan first = index.Admit(1, Prompt(3));
  // The same prompt while the first is filling: no hit, and no second copy.
  EXPECT_TRUE(index.Admit(2, Prompt(3)).empty());
  index.Ended(2);
  index.Prefilled(1);
  const PrefixPlan again = index.Admit(3, Prompt(3));
  EXPECT_EQ(again.restore, first.save);
  EXPECT_TRUE(again.save.empty());
  EXPECT_EQ(index.stats().hits, 1);
  EXPECT_EQ(index.stats().hit_positions, 3 * B);
}

TEST(PrefixCacheIndex, TheLastPositionAlwaysRuns) {
  PrefixCacheIndex index(8, kBlockBytes);
  index.Admit(1, Prompt(2, 0, 0));  // exactly two blocks
  index.Prefilled(1);
  const PrefixPlan plan = index.Admit(2, Prompt(2, 0, 0));
  EXPECT_EQ(plan.restore.size(), 1u);  // the second block holds the last position
  EXPECT_TRUE(plan.save.empty());
  EXPECT_EQ(plan.first_position(), B);
}

TEST(PrefixCacheIndex, ALongerPromptRestoresTheSharedBlocksAndFillsTheRest) {
  PrefixCacheIndex index(8, kBlockBytes);
  const PrefixPlan turn1 = index.Admit(1, Prompt(2));
  index.Prefilled(1);
  const PrefixPlan turn2 = index.Admit(2, Prompt(4));
  EXPECT_EQ(turn2.restore, turn1.save);
  EXPECT_EQ(turn2.save.size(), 2u);
  EXPECT_EQ(index.stats().blocks_in_use, 4);
}

TEST(PrefixCacheIndex, ADifferentBlockEndsTheMatchEvenAfterASharedOne) {
  PrefixCacheIndex index(8, kBlockBytes);
  index.Admit(1, Prompt(2));
  index.Prefilled(1);
  std::vector<int32_t> other = Prompt(2);
  other[static_cast<size_t>(B + 3)] = 999;
  const PrefixPlan plan = index.Admit(2, other);
  EXPECT_EQ(plan.restore.size(), 1u);
  EXPECT_EQ(plan.save.size(), 1u);
}

TEST(PrefixCacheIndex, TheSameBlockAfterADifferentPrefixIsNotAHit) {
  PrefixCacheIndex index(8, kBlockBytes);
  index.Admit(1, Prompt(2));
  index.Prefilled(1);
  // Block 1's ids after another block 0.
  std::vector<int32_t> other = Prompt(2);
  for (int64_t i = 0; i < B; ++i) other[static_cast<size_t>(i)] += 500;
  EXPECT_TRUE(index.Admit(2, other).restore.empty());
}

TEST(PrefixCacheIndex, EndedBeforePrefilledDropsTheBlocksItWasFilling) {
  PrefixCacheIndex index(8, kBlockBytes);
  index.Admit(1, Prompt(3));
  index.Ended(1);
  EXPECT_EQ(index.stats().blocks_in_use, 0);
  EXPECT_TRUE(index.Admit(2, Prompt(3)).restore.empty());
}

TEST(PrefixCacheIndex, FullCacheEvictsTheLeastRecentlyUsedLeaf) {
  PrefixCacheIndex index(4, kBlockBytes);
  index.Admit(1, Prompt(2, 0));  // blocks a0 a1
  index.Prefilled(1);
  index.Admit(2, Prompt(2, 1000));  // blocks b0 b1
  index.Prefilled(2);
  // Use a again: b is now the least recently used.
  EXPECT_EQ(index.Admit(3, Prompt(2, 0)).restore.size(), 2u);
  index.Prefilled(3);
  const PrefixPlan c = index.Admit(4, Prompt(1, 2000));
  EXPECT_EQ(c.save.size(), 1u);
  EXPECT_EQ(index.stats().evictions, 1);
  index.Prefilled(4);
  // b's leaf went, b's first block and a stay.
  EXPECT_EQ(index.Admit(5, Prompt(2, 0)).restore.size(), 2u);
  index.Prefilled(5);
  const PrefixPlan b = index.Admit(6, Prompt(2, 1000));
  EXPECT_EQ(b.restore.size(), 1u);
  EXPECT_EQ(index.stats().blocks_in_use, 4);
}

TEST(PrefixCacheIndex, ReferencedAndParentBlocksAreNeverEvicted) {
  PrefixCacheIndex index(2, kBlockBytes);
  index.Admit(1, Prompt(2));  // both blocks, pending and referenced
  const PrefixPlan other = index.Admit(2, Prompt(1, 1000));
  EXPECT_TRUE(other.empty());
  index.Ended(2);
  index.Prefilled(1);
  // Block 0 is older, but block 1 names it as parent: block 1 goes.
  const PrefixPlan next = index.Admit(3, Prompt(1, 1000));
  EXPECT_EQ(next.save.size(), 1u);
  EXPECT_EQ(index.stats().evictions, 1);
  index.Prefilled(3);
  EXPECT_EQ(index.Admit(4, Prompt(2)).restore.size(), 1u);
}

TEST(PrefixCacheIndex, ManyDistinctPromptsStayWithinTheCapacity) {
  PrefixCacheIndex index(10, kBlockBytes);
  for (int32_t i = 0; i < 200; ++i) {
    index.Admit(i, Prompt(3, i * 100));
    if (i % 3 == 0) {
      index.Ended(i);
    } else {
      index.Prefilled(i);
    }
    ASSERT_LE(index.stats().blocks_in_use, 10);
    ASSERT_LE(index.stats().bytes_in_use, index.stats().capacity_bytes);
  }
  EXPECT_GT(index.stats().evictions, 0);
}

TEST(PrefixCacheIndex, ZeroCapacityIsOff) {
  PrefixCacheIndex index(0, kBlockBytes);
  EXPECT_TRUE(index.Admit(1, Prompt(3)).empty());
  index.Prefilled(1);
  EXPECT_EQ(index.stats(), PrefixCacheStats{});
}

}  // namespace
}  // namespace inferno
