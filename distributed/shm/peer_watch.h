// PeerWatch: whether a peer process on this host still runs, watched through
// a pidfd, so that a wait on shared memory ends with PeerLost as soon as the
// peer dies instead of at its deadline. A pidfd refers to the process, not to
// its number: once the peer has ended, a new process that reuses the pid is
// never mistaken for it.
//
// What it cannot see: a stopped (SIGSTOP) or hung peer still runs. In a job
// the liveness watch of the ZeroMQ control plane finds those within seconds
// (see ZmqTransportOptions::beat_interval), ending waits here through
// ShmTransportOptions::also_check; without it waits on such a peer end at
// their deadline with Timeout. Stopped() tells a stopped peer from one that
// runs (and may be waiting itself), for that Timeout's message.
//
// Thread-safety: Check may be called from several threads at once; Open and
// the destructor from one.
#pragma once

#include <sys/types.h>

#include <chrono>

#include "base/error.h"

namespace inferno {

// When a wait on shared memory times out on a peer that runs (not stopped),
// how much longer it waits for what it awaits or for the abort notice of the
// rank that saw the fault first (the peer may itself be waiting on that
// fault), as ZmqTransport does for a peer that answers its ping; well under
// the 2 s a rank may take past its timeout.
inline constexpr std::chrono::milliseconds kPeerAliveGrace{1000};

class PeerWatch {
 public:
  // Starts watching process `pid` (of this pid namespace), rank `rank` of the
  // job. Errors: PeerLost (no such process: it already ended), Io (pidfd_open
  // failed otherwise, e.g. the kernel is older than 5.3).
  static Result<PeerWatch> Open(int rank, pid_t pid);

  PeerWatch(PeerWatch&& other) noexcept;
  PeerWatch& operator=(PeerWatch&& other) noexcept;
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  ~PeerWatch();

  int rank() const { return rank_; }
  pid_t pid() const { return pid_; }

  // OK while the process runs (or is stopped); PeerLost naming the rank and
  // pid once it has ended (exited or killed, reaped or not). Never blocks.
  Status Check() const;

  // True while the process is stopped (SIGSTOP, or a tracer holds it), read
  // from /proc/<pid>/stat; false while it runs or sleeps, or once it ended
  // (then Check says so). Never blocks.
  bool Stopped() const;

 private:
  PeerWatch(int rank, pid_t pid, int pidfd) : rank_(rank), pid_(pid), pidfd_(pidfd) {}

  int rank_;
  pid_t pid_;
  int pidfd_;
};

}  // namespace inferno
