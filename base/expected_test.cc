#include "base/expected.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

struct TestError {
  std::string message;
};

Expected<int, TestError> ParsePositive(int x) {
  if (x <= 0) return TestError{"not positive: " + std::to_string(x)};
  return x;
}

TEST(Expected, HoldsValueWhenOk) {
  auto r = ParsePositive(3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 3);
}

TEST(Expected, HoldsErrorWhenNotOk) {
  auto r = ParsePositive(-2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "not positive: -2");
}

TEST(Expected, MovesOutValue) {
  Expected<std::vector<int>, TestError> r(std::vector<int>{1, 2, 3});
  std::vector<int> v = *std::move(r);
  EXPECT_EQ(v.size(), 3u);
}

TEST(Expected, VoidSpecializationCarriesError) {
  Expected<void, TestError> ok;
  EXPECT_TRUE(ok.ok());
  Expected<void, TestError> bad = TestError{"boom"};
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "boom");
}

TEST(ExpectedDeathTest, ValueOnErrorIsProgrammerError) {
  auto r = ParsePositive(0);
  EXPECT_DEATH((void)r.value(), "on an error");
}

}  // namespace
}  // namespace inferno
