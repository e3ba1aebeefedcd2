#include "distributed/shm/doorbell.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Sleeps at once and never wakes up on its own before the deadline, so only a
// Ring() can end a wait early.
WaitPolicy SleepOnlyPolicy() {
  WaitPolicy policy;
  policy.busy_spin = std::chrono::nanoseconds(0);
  policy.spin = std::chrono::nanoseconds(0);
  policy.check_interval = milliseconds(600000);
  return policy;
}

TEST(Doorbell, WaitReturnsFalseAtTheDeadlineWhenTheConditionStaysFalse) {
  Doorbell bell;
  Result<bool> woken =
      bell.WaitUntil([] { return false; }, Clock::now() + milliseconds(30), SleepOnlyPolicy());
  ASSERT_TRUE(woken.ok()) << woken.error().ToString();
  EXPECT_FALSE(*woken);
}

TEST(Doorbell, CheckErrorEndsTheWait) {
  Doorbell bell;
  WaitPolicy policy = SleepOnlyPolicy();
  policy.check = []() -> Status { return Error::PeerLost("test", 3); };
  Result<bool> woken = bell.WaitUntil([] { return false; }, Clock::now() + seconds(60), policy);
  ASSERT_FALSE(woken.ok());
  EXPECT_EQ(woken.error().kind, ErrorKind::kPeerLost);
}

// Two threads hand a counter back and forth, each sleeping (no spin) until
// the other rings. A lost wake-up leaves a waiter asleep until its deadline,
// where the condition counts as false.
TEST(Doorbell, NoWakeUpIsLostBetweenTwoSleepingThreads) {
  struct alignas(64) Side {
    Doorbell bell;
    std::atomic<int> value{0};
  };
  Side sides[2];
  constexpr int kRounds = 2000;
  auto play = [&](int me) -> bool {
    Side& mine = sides[me];
    Side& theirs = sides[1 - me];
    for (int round = 1; round <= kRounds; ++round) {
      if (me == 1 || round > 1) {
        const Deadline deadline = Clock::now() + seconds(20);
        const int want = me == 0 ? round - 1 : round;
        auto arrived = [&] {
          return mine.value.load(std::memory_order_acquire) >= want && Clock::now() < deadline;
        };
        Result<bool> woken = mine.bell.WaitUntil(arrived, deadline, SleepOnlyPolicy());
        if (!woken.ok() || !*woken) return false;
      }
      theirs.value.store(round, std::memory_order_release);
      theirs.bell.Ring();
    }
    return true;
  };
  bool second_ok = false;
  std::thread second([&] { second_ok = play(1); });
  const bool first_ok = play(0);
  second.join();
  EXPECT_TRUE(first_ok);
  EXPECT_TRUE(second_ok);
}

}  // namespace
}  // namespace inferno
