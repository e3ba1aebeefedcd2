// Progress: how this process tells a long computation from a hung one, for
// the liveness watch of a distributed job (distributed/zmq/transport.h sends
// what StallClock measures to every peer in its heartbeats).
//
// The contract, process-wide:
// - Code that is expected to finish by itself marks itself with a
//   `ProgressExpected` scope (the generator loop: every step of prefill and
//   decode). Outside every such scope this process is never called stalled:
//   an idle rank, one loading weights before the rendezvous, or a test that
//   holds a transport open is not hung.
// - Compute advances the counter with ProgressAdvanced() at least every few
//   tens of milliseconds of work (the kernels: every chunk of a thread pool's
//   loop and every block of matrix rows), so a long prefill is never stalled.
// - A wait on something outside this process (a peer's message, room in a
//   peer's queue, a client's request) is a `WaitingOutside` scope: a thread
//   blocked there is waiting, not hung; what it waits on is the other side's
//   liveness, watched by its own heartbeats. Entering and leaving a wait also
//   count as progress.
// So the process is stalled while some thread is inside a ProgressExpected
// scope, no thread is inside a WaitingOutside scope, and the counter does not
// move: e.g. a main thread deadlocked, or spinning on a flag, in the middle
// of a step. A thread hung *inside* a wait scope is not seen here; the op's
// deadline (Transport::timeout) still ends that.
//
// Thread-safety: every function and scope may be used from any thread at
// once; StallClock::Sample from one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>

namespace inferno {

// Counts one unit of progress (a relaxed atomic increment: cheap enough for
// every block of a kernel).
void ProgressAdvanced();

// While one lives, this process is expected to progress (see above).
// Nestable, from any thread.
class ProgressExpected {
 public:
  ProgressExpected();
  ~ProgressExpected();
  ProgressExpected(const ProgressExpected&) = delete;
  ProgressExpected& operator=(const ProgressExpected&) = delete;
};

// While one lives, the thread that made it waits on something outside this
// process (see above). Nestable, from any thread.
class WaitingOutside {
 public:
  WaitingOutside();
  ~WaitingOutside();
  WaitingOutside(const WaitingOutside&) = delete;
  WaitingOutside& operator=(const WaitingOutside&) = delete;
};

// Measures how long this process has been stalled, from samples of the
// counters: call Sample regularly (a heartbeat thread, every 100 ms). The
// result is 0 unless the process is stalled now, and then counts from the
// first sample that saw the counter at its present value (so it trails the
// truth by at most one sampling interval, and never runs ahead of it).
class StallClock {
 public:
  using Clock = std::chrono::steady_clock;

  std::chrono::milliseconds Sample(Clock::time_point now);

 private:
  bool sampled_ = false;
  uint64_t last_advanced_ = 0;
  Clock::time_point unchanged_since_{};
};

}  // namespace inferno
