#include "runtime/step_decisions.h"

#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

StepDecisions Sample() {
  StepDecisions decisions;
  decisions.admitted.push_back(
      SequenceSpec{7, {1, 72, 101}, 30, {0.8f, 40, 0.9f, 1234, -0.5f, 1.25f, 1.1f, 5}});
  decisions.admitted[0].prefix = PrefixPlan{{3}, {4, 5}};
  decisions.admitted.push_back(SequenceSpec{-3, {5}, 0, {}, nullptr, /*leader_picks=*/true});
  decisions.cancelled = {2, int64_t{1} << 40};
  decisions.exhausted = true;
  decisions.tick_due = true;
  return decisions;
}

std::string DecodeError(const std::vector<std::byte>& bytes) {
  Result<StepDecisions> decoded = DecodeStepDecisions(bytes);
  if (decoded) return "no error";
  EXPECT_EQ(decoded.error().kind, ErrorKind::kCorruption);
  return decoded.error().message;
}

TEST(StepDecisions, RoundTripsEveryField) {
  const StepDecisions decisions = Sample();
  Result<StepDecisions> decoded = DecodeStepDecisions(EncodeStepDecisions(decisions));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, decisions);
  Result<StepDecisions> empty = DecodeStepDecisions(EncodeStepDecisions({}));
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(*empty, StepDecisions{});
}

// A constraint that leaves every token.
class Anything : public TokenConstraint {
 public:
  void Mask(std::span<float>) override {}
  void Accept(int32_t) override {}
};

TEST(StepDecisions, AConstraintReachesTheOtherRanksAsLeaderPicks) {
  StepDecisions decisions;
  decisions.admitted.push_back(SequenceSpec{1, {9}, 4, {}, std::make_shared<Anything>()});
  Result<StepDecisions> decoded = DecodeStepDecisions(EncodeStepDecisions(decisions));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->admitted[0].constraint, nullptr);
  EXPECT_TRUE(decoded->admitted[0].leader_picks);
}

TEST(StepDecisions, EmptyDecisionsAreFlagsAndTwoZeroCounts) {
  StepDecisions tick;
  tick.tick_due = true;
  EXPECT_EQ(EncodeStepDecisions(tick),
            std::vector<std::byte>({std::byte{2}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0},
                                    std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0}}));
}

TEST(StepDecisions, EveryTruncationFails) {
  const std::vector<std::byte> bytes = EncodeStepDecisions(Sample());
  for (size_t size = 0; size < bytes.size(); ++size) {
    EXPECT_NE(DecodeError(std::vector<std::byte>(bytes.begin(), bytes.begin() + size)), "no error") << size;
  }
}

TEST(StepDecisions, TrailingBytesFail) {
  std::vector<std::byte> bytes = EncodeStepDecisions(Sample());
  bytes.push_back(std::byte{0});
  EXPECT_NE(DecodeError(bytes).find("cancellations"), std::string::npos);
}

TEST(StepDecisions, UnknownFlagsFail) {
  std::vector<std::byte> bytes = EncodeStepDecisions({});
  bytes[0] = std::byte{4};
  EXPECT_NE(DecodeError(bytes).find("unknown flags 4"), std::string::npos);
}

TEST(StepDecisions, CountsLargerThanTheBytesFailWithoutAllocating) {
  std::vector<std::byte> bytes = EncodeStepDecisions({});
  bytes[1] = bytes[2] = bytes[3] = bytes[4] = std::byte{0xff};
  EXPECT_NE(DecodeError(bytes).find("4294967295 sequences in 4 bytes"), std::string::npos);
  StepDecisions one;
  one.admitted.push_back(SequenceSpec{1, {9}, 4, {}});
  bytes = EncodeStepDecisions(one);
  // The prompt's length word: after the flags, the count and 53 bytes of sequence.
  for (size_t i = 58; i < 62; ++i) bytes[i] = std::byte{0xff};
  EXPECT_NE(DecodeError(bytes).find("a prompt of 4294967295 ids"), std::string::npos);
  bytes = EncodeStepDecisions(one);
  // The prefix plan's restored count: after the one prompt id.
  for (size_t i = 66; i < 70; ++i) bytes[i] = std::byte{0xff};
  EXPECT_NE(DecodeError(bytes).find("truncated prefix plan of sequence 1"), std::string::npos);
}

TEST(StepDecisions, SamplingASamplerRefusesFails) {
  for (const SamplingOptions& bad :
       std::vector<SamplingOptions>{{1e-4f, 0, 1.0f, 1},
                                    {0.5f, -1, 1.0f, 1},
                                    {0.5f, 0, 0.0f, 1},
                                    {0.5f, 0, 1.5f, 1},
                                    {std::numeric_limits<float>::quiet_NaN(), 0, 1.0f, 1},
                                    {0.5f, 0, 1.0f, 1, 2.5f},
                                    {0.5f, 0, 1.0f, 1, 0.0f, -3.0f},
                                    {0.5f, 0, 1.0f, 1, 0.0f, 0.0f, 0.0f},
                                    {0.5f, 0, 1.0f, 1, 0.0f, 0.0f, 1.0f, kMaxTopLogprobs + 1}}) {
    StepDecisions decisions;
    decisions.admitted.push_back(SequenceSpec{1, {9}, 4, bad});
    EXPECT_NE(DecodeError(EncodeStepDecisions(decisions)).find("sequence 1 with"), std::string::npos);
  }
  StepDecisions negative;
  negative.admitted.push_back(SequenceSpec{1, {9}, -1, {}});
  EXPECT_NE(DecodeError(EncodeStepDecisions(negative)).find("max_new_tokens -1"), std::string::npos);
}

}  // namespace
}  // namespace inferno
