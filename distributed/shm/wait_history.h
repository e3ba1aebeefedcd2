// WaitHistory: what one waiter learnt from its recent waits, to decide how
// long its next wait polls before it sleeps — an adaptive spin, as in an
// adaptive mutex. A futex sleep costs the sleeper its wake-up (55-150 us on
// a quiet 2-core VM, docs/engine.md "Where EP 2's time goes"), which lands
// on the critical path of every collective; polling avoids it but burns the
// core. So a waiter polls up to a bound only while its recent waits ended
// within that bound, and otherwise sleeps after the short default poll.
//
// The rule (a saturating score in [0, kFull]): a wait that ended, ready,
// within `bound` adds 1; any other wait (longer, timed out, failed, or one
// whose poll found the core crowded: Doorbell::WaitUntil) takes kMissCost
// away. The next wait polls for `bound` while the score is at
// least kPoll, else for the policy's short `spin`. Starting at 0, it takes
// kPoll quick waits in a row to start polling long, and one long wait
// (kMissCost > kFull - kPoll) to stop it: on a loaded machine, where the
// peer waits for a core, waits grow past the bound and the waiter goes back
// to sleeping (docs/collectives.md, "WaitPolicy").
//
// Thread-safety: Record and PollFor may race (relaxed atomics: a lost update
// only delays learning by a wait); meant for one waiter at a time.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>

namespace inferno {

class WaitHistory {
 public:
  static constexpr int kFull = 4;
  static constexpr int kPoll = 2;
  static constexpr int kMissCost = 3;

  WaitHistory() = default;
  WaitHistory(const WaitHistory& other) : score_(other.score_.load(std::memory_order_relaxed)) {}
  WaitHistory& operator=(const WaitHistory& other) {
    score_.store(other.score_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }

  // How long the next wait polls (yielding the CPU) before it sleeps.
  std::chrono::nanoseconds PollFor(std::chrono::nanoseconds spin, std::chrono::nanoseconds bound) const {
    return score_.load(std::memory_order_relaxed) >= kPoll ? std::max(spin, bound) : spin;
  }

  // Learns from one wait that lasted `waited`; `ready` is false when it timed
  // out, failed or found the core crowded.
  void Record(std::chrono::nanoseconds waited, bool ready, std::chrono::nanoseconds bound) {
    const int score = score_.load(std::memory_order_relaxed);
    const bool quick = ready && waited <= bound;
    score_.store(quick ? std::min(score + 1, kFull) : std::max(score - kMissCost, 0),
                 std::memory_order_relaxed);
  }

 private:
  std::atomic<int> score_{0};
};

}  // namespace inferno
