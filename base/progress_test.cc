#include "base/progress.h"

#include <chrono>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using std::chrono::milliseconds;
const StallClock::Clock::time_point kStart{};

TEST(StallClock, NeverStalledOutsideAProgressExpectedScope) {
  StallClock clock;
  EXPECT_EQ(clock.Sample(kStart), milliseconds(0));
  EXPECT_EQ(clock.Sample(kStart + milliseconds(5000)), milliseconds(0));
}

TEST(StallClock, CountsFromTheFirstSampleThatSawTheCounterAsItIs) {
  ProgressExpected busy;
  StallClock clock;
  EXPECT_EQ(clock.Sample(kStart), milliseconds(0));
  EXPECT_EQ(clock.Sample(kStart + milliseconds(200)), milliseconds(200));
  EXPECT_EQ(clock.Sample(kStart + milliseconds(2200)), milliseconds(2200));
}

TEST(StallClock, ProgressStartsTheCountAgain) {
  ProgressExpected busy;
  StallClock clock;
  clock.Sample(kStart);
  EXPECT_EQ(clock.Sample(kStart + milliseconds(1000)), milliseconds(1000));
  ProgressAdvanced();
  EXPECT_EQ(clock.Sample(kStart + milliseconds(1100)), milliseconds(0));
  EXPECT_EQ(clock.Sample(kStart + milliseconds(1300)), milliseconds(200));
}

TEST(StallClock, LeavingAWaitIsProgress) {
  ProgressExpected busy;
  StallClock clock;
  {
    const WaitingOutside waiting;
    clock.Sample(kStart);
    EXPECT_EQ(clock.Sample(kStart + milliseconds(5000)), milliseconds(0));
  }
  EXPECT_EQ(clock.Sample(kStart + milliseconds(5100)), milliseconds(0));
  EXPECT_EQ(clock.Sample(kStart + milliseconds(5300)), milliseconds(200));
}

TEST(StallClock, AThreadWaitingOutsideIsNotStalled) {
  ProgressExpected busy;
  StallClock clock;
  WaitingOutside waiting;
  clock.Sample(kStart);
  EXPECT_EQ(clock.Sample(kStart + milliseconds(100)), milliseconds(0));
  EXPECT_EQ(clock.Sample(kStart + milliseconds(5000)), milliseconds(0));
}

}  // namespace
}  // namespace inferno
