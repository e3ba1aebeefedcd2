// Doorbell: a wake-up word that processes sharing a mapping use to wait for a
// condition on other words of that mapping (a ring's head, a flag) without
// burning the CPU their peer needs: a short busy spin, a bounded yielding
// spin (longer while the waiter's recent waits were short: WaitHistory),
// then a futex sleep.
//
// The protocol, for a condition `ready()` over atomics in shared memory:
//   waker:  make the condition true (a release store), then Ring();
//   waiter: WaitUntil(ready, deadline, policy).
// Ring() costs one atomic increment and, only when someone sleeps (the
// sleeper count is non-zero), a FUTEX_WAKE system call. A waiter registers as
// a sleeper and reads the sequence word before its last look at the
// condition, and FUTEX_WAIT sleeps only while the sequence is unchanged, so a
// Ring() between that look and the sleep is never lost.
//
// Layout: 8 bytes, two 32-bit words; all-zero bytes are a valid doorbell, so
// a freshly created (zero-filled) shared mapping needs no initialisation.
// The futex is not process-private: it works across processes that map the
// same memory, and between threads of one process.
//
// Thread-safety: any number of threads and processes may Ring() and
// WaitUntil() at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

#include "base/error.h"
#include "base/progress.h"
#include "distributed/shm/wait_history.h"
#include "distributed/transport.h"

namespace inferno {

// How a wait spends its time before the deadline.
struct WaitPolicy {
  // How long to poll the condition first, keeping the CPU (PAUSE between
  // looks): a peer running on the other core answers within this. Without
  // it a 2-rank 4 KiB all_reduce in a CollectiveArea took 3.6 or 16 us
  // (bimodal: ranks that yield at once were often run on one core), with
  // 2 us of it 1.8-2.0 us (docs/collectives.md).
  std::chrono::nanoseconds busy_spin{std::chrono::microseconds(2)};
  // How long to poll the condition next, before sleeping, giving the CPU
  // away (sched_yield) between looks, so a waiter never keeps its peer off
  // the only free core. On 2 cores at load 8-9, 2 ranks, 4 KiB: a futex
  // sleep and wake per message made an all_reduce over rings take 55-66 us
  // and a one-way ping-pong message 17-24 us; polling with sched_yield for
  // 50 us first, 37-42 us and 7 us (docs/collectives.md).
  std::chrono::nanoseconds spin{std::chrono::microseconds(50)};
  // With a WaitHistory: how long the yielding poll lasts instead of `spin`
  // while that waiter's recent waits ended within it (WaitHistory's rule).
  // Two ranks of --ep 2 meet 0.5-0.7 ms apart at a mixture's all_reduce
  // (docs/engine.md); a sleep there costs the sleeper a 55-150 us wake-up.
  std::chrono::nanoseconds adaptive_spin{std::chrono::milliseconds(1)};
  // A sched_yield that returns later than this ran another thread: the core
  // has no room, so the poll stops at `spin` and the wait counts as a long
  // one in the WaitHistory (an idle core returns from it within ~1 us; a
  // thread that took the core keeps it for a scheduler slice, ~1 ms).
  std::chrono::nanoseconds crowded_yield{std::chrono::microseconds(50)};
  // The longest single sleep; `check` runs at least this often while asleep.
  std::chrono::milliseconds check_interval{50};
  // Unset, or called before the first sleep and between sleeps: an error ends
  // the wait with that error (e.g. PeerLost when the peer process died, so a
  // dead peer never keeps a waiter asleep until its deadline).
  std::function<Status()> check;
};

class Doorbell {
 public:
  // Wakes every waiter of this doorbell (in any process).
  void Ring();

  // Returns true once `ready()` returns true, false if it is still false at
  // `deadline`, or the error of `policy.check`. `ready` must read what the
  // waker publishes with acquire (or stronger) loads; it is called often.
  // With `history` (the waiter's own), the yielding poll lasts
  // `history->PollFor(policy.spin, policy.adaptive_spin)` (cut to
  // `policy.spin` once a yield took longer than `policy.crowded_yield`) and
  // the wait is recorded there; without, it lasts `policy.spin`.
  template <typename Ready>
  Result<bool> WaitUntil(const Ready& ready, Deadline deadline, const WaitPolicy& policy,
                         WaitHistory* history = nullptr);

 private:
  // Sleeps until Ring() changes the sequence from `seen`, `until`, or a
  // spurious wake-up, whichever comes first.
  void Sleep(uint32_t seen, Deadline until);

  std::atomic<uint32_t> sequence_{0};
  std::atomic<uint32_t> sleepers_{0};
};

static_assert(sizeof(Doorbell) == 8 && std::atomic<uint32_t>::is_always_lock_free);

// Lets another runnable thread of this CPU run (sched_yield), if there is one.
void YieldCpu();

// Spins without hogging the core's shared resources (PAUSE on x86).
void CpuRelax();

template <typename Ready>
Result<bool> Doorbell::WaitUntil(const Ready& ready, Deadline deadline, const WaitPolicy& policy,
                                 WaitHistory* history) {
  if (ready()) return true;
  const WaitingOutside waiting;  // on a peer process (base/progress.h)
  const Deadline started = Clock::now();
  bool crowded = false;  // a yield ran another thread: the core had no room
  const auto done = [&](Result<bool> outcome) {
    if (history != nullptr) {
      history->Record(Clock::now() - started, outcome.ok() && *outcome && !crowded, policy.adaptive_spin);
    }
    return outcome;
  };
  const Deadline busy_until = std::min(started + policy.busy_spin, deadline);
  while (Clock::now() < busy_until) {
    for (int i = 0; i < 16; ++i) CpuRelax();
    if (ready()) return done(true);
  }
  Deadline looked = Clock::now();
  const Deadline short_until = std::min(looked + policy.spin, deadline);
  Deadline spin_until = short_until;
  if (history != nullptr)
    spin_until = std::min(looked + history->PollFor(policy.spin, policy.adaptive_spin), deadline);
  while (looked < spin_until) {
    YieldCpu();
    if (ready()) return done(true);
    const Deadline now = Clock::now();
    if (now - looked > policy.crowded_yield && !crowded) {
      crowded = true;
      spin_until = std::min(spin_until, short_until);
    }
    looked = now;
  }
  for (;;) {
    if (policy.check) {
      Status alive = policy.check();
      if (!alive) return done(alive.error());
    }
    const Deadline now = Clock::now();
    if (now >= deadline) return done(ready());
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = sequence_.load(std::memory_order_seq_cst);
    const bool ready_before_sleep = ready();
    if (!ready_before_sleep) Sleep(seen, std::min(deadline, now + policy.check_interval));
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    if (ready_before_sleep || ready()) return done(true);
  }
}

}  // namespace inferno
