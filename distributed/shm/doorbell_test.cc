#include "distributed/shm/doorbell.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using std::chrono::microseconds;
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

TEST(WaitHistory, PollsLongOnlyAfterKPollQuickWaitsInARow) {
  const microseconds spin(50), bound(1000);
  WaitHistory history;
  EXPECT_EQ(history.PollFor(spin, bound), spin);
  for (int i = 1; i < WaitHistory::kPoll; ++i) history.Record(microseconds(400), true, bound);
  EXPECT_EQ(history.PollFor(spin, bound), spin);
  history.Record(bound, true, bound);  // within the bound: quick
  EXPECT_EQ(history.PollFor(spin, bound), bound);
}

TEST(WaitHistory, OneLongTimedOutOrFailedWaitStopsTheLongPoll) {
  const microseconds spin(50), bound(1000);
  for (int outcome = 0; outcome < 3; ++outcome) {
    WaitHistory history;
    for (int i = 0; i < 10; ++i) history.Record(microseconds(10), true, bound);
    ASSERT_EQ(history.PollFor(spin, bound), bound);
    if (outcome == 0) history.Record(bound + microseconds(1), true, bound);
    if (outcome == 1) history.Record(microseconds(10), false, bound);
    if (outcome == 2) history.Record(milliseconds(50), false, bound);
    EXPECT_EQ(history.PollFor(spin, bound), spin) << "outcome " << outcome;
    // A copy carries what was learnt.
    WaitHistory copy = history;
    copy.Record(microseconds(10), true, bound);
    EXPECT_EQ(copy.PollFor(spin, bound), bound) << "outcome " << outcome;
  }
}

TEST(WaitHistory, NeverPollsShorterThanTheSpin) {
  WaitHistory history;
  for (int i = 0; i < 10; ++i) history.Record(microseconds(1), true, microseconds(20));
  EXPECT_EQ(history.PollFor(microseconds(50), microseconds(20)), microseconds(50));
}

// A long poll's setup: a policy that polls long (`adaptive_spin`, far beyond
// any run of these tests) and whose check, which precedes a sleep, fails and
// counts its calls; a history of quick waits; and a condition that turns
// true on its 2000th look, not at a time.
struct LongPoll {
  explicit LongPoll(std::chrono::nanoseconds crowded_yield) : policy(SleepOnlyPolicy()) {
    policy.adaptive_spin = seconds(600);
    policy.crowded_yield = crowded_yield;
    policy.check = [this]() -> Status {
      ++checks;
      return Error::PeerLost("test: the waiter reached its sleep", 1);
    };
    for (int i = 0; i < WaitHistory::kFull; ++i) quick.Record(microseconds(1), true, policy.adaptive_spin);
  }
  Result<bool> Wait(WaitHistory& history) {
    looks = 0;
    return bell.WaitUntil([this] { return ++looks >= 2000; }, Clock::now() + seconds(600), policy, &history);
  }

  WaitPolicy policy;
  int checks = 0;
  int looks = 0;
  Doorbell bell;
  WaitHistory quick;
};

// With a history of quick waits a waiter polls and never reaches the check
// that precedes a sleep; with a fresh history the same wait sleeps after a
// zero-length poll, so it calls the check first. No yield counts as crowded.
TEST(Doorbell, HistoryOfQuickWaitsKeepsTheWaiterPollingAndOffTheSleep) {
  LongPoll poll(seconds(600));
  Result<bool> polled = poll.Wait(poll.quick);
  ASSERT_TRUE(polled.ok()) << polled.error().ToString();
  EXPECT_TRUE(*polled);
  EXPECT_EQ(poll.checks, 0);

  WaitHistory fresh;
  Result<bool> slept = poll.Wait(fresh);
  ASSERT_FALSE(slept.ok());
  EXPECT_EQ(slept.error().kind, ErrorKind::kPeerLost);
  EXPECT_EQ(poll.checks, 1);
  // The failed wait counts as a long one.
  EXPECT_EQ(fresh.PollFor(poll.policy.spin, poll.policy.adaptive_spin), poll.policy.spin);
}

// A yield that takes longer than `crowded_yield` (here any yield: 0 ns) means
// another thread needed the core: the long poll stops at `spin` (0 here), the
// waiter reaches its sleep, and the wait counts as a long one.
TEST(Doorbell, CrowdedYieldStopsTheLongPoll) {
  LongPoll poll(std::chrono::nanoseconds(0));
  Result<bool> woken = poll.Wait(poll.quick);
  ASSERT_FALSE(woken.ok());
  EXPECT_EQ(poll.checks, 1);
  EXPECT_LT(poll.looks, 2000);
  EXPECT_EQ(poll.quick.PollFor(poll.policy.spin, poll.policy.adaptive_spin), poll.policy.spin);
}

}  // namespace
}  // namespace inferno
