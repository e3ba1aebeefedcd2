#include "runtime/test_only_hang.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::function<const char*(const char*)> Environment(const char* hang) {
  return [hang](const char* name) { return std::string(name) == kTestOnlyHangVariable ? hang : nullptr; };
}

TEST(TestOnlyHangStep, NamesTheStepOfTheNamedRankOnly) {
  EXPECT_EQ(*TestOnlyHangStep(Environment(nullptr), 1), std::nullopt);
  EXPECT_EQ(*TestOnlyHangStep(Environment("1:5"), 1), std::optional<int64_t>(5));
  EXPECT_EQ(*TestOnlyHangStep(Environment("1:5"), 0), std::nullopt);
}

TEST(TestOnlyHangStep, RefusesAnythingButRankColonStep) {
  for (const char* bad : {"", "1", "1:", ":5", "1:0", "-1:5", "1:5x", "1,5", "a:b"}) {
    Result<std::optional<int64_t>> step = TestOnlyHangStep(Environment(bad), 1);
    ASSERT_FALSE(step.ok()) << bad;
    EXPECT_EQ(step.error().message,
              std::string("INFERNO_TEST_ONLY_HANG: expected RANK:STEP (STEP >= 1), got '") + bad + "'");
  }
}

}  // namespace
}  // namespace inferno
