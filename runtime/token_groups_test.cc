#include "runtime/token_groups.h"

#include <variant>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::vector<int32_t> Sequences(const std::vector<MessageHeader>& group) {
  std::vector<int32_t> sequences;
  for (const MessageHeader& header : group) sequences.push_back(std::get<TokenMessage>(header).sequence);
  return sequences;
}

TEST(TokenGroups, GroupOfTheTargetSizeGoesAtOnce) {
  TokenGroups groups(/*stages=*/2, /*max_group=*/4);
  groups.Departed();
  groups.Departed();
  groups.Add(TokenMessage{0, 7});
  groups.Add(TokenMessage{1, 8});
  std::vector<MessageHeader> group;
  // 4 running over 2 stages: groups of 2, even with every stage busy.
  ASSERT_TRUE(groups.NextGroup(4, group));
  EXPECT_EQ(Sequences(group), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(groups.on_the_way(), 3);
  EXPECT_FALSE(groups.NextGroup(4, group));
}

TEST(TokenGroups, SmallerRestWaitsWhileEveryStageHasAGroup) {
  TokenGroups groups(2, 4);
  groups.Departed();
  groups.Departed();
  groups.Add(TokenMessage{3, 1});
  std::vector<MessageHeader> group;
  EXPECT_FALSE(groups.NextGroup(4, group));
  groups.Returned();
  ASSERT_TRUE(groups.NextGroup(4, group));
  EXPECT_EQ(Sequences(group), (std::vector<int32_t>{3}));
}

TEST(TokenGroups, GroupsAreCappedAtMaxGroup) {
  TokenGroups groups(2, 3);
  for (int32_t s = 0; s < 7; ++s) groups.Add(TokenMessage{s, s});
  std::vector<MessageHeader> group;
  // 10 running over 2 stages would make groups of 5; max_group caps them at 3.
  ASSERT_TRUE(groups.NextGroup(10, group));
  EXPECT_EQ(Sequences(group), (std::vector<int32_t>{0, 1, 2}));
  ASSERT_TRUE(groups.NextGroup(10, group));
  EXPECT_EQ(Sequences(group), (std::vector<int32_t>{3, 4, 5}));
  // The rest (1) waits: two groups are on their way.
  EXPECT_FALSE(groups.NextGroup(10, group));
}

}  // namespace
}  // namespace inferno
