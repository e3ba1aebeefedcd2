// Mailbox: the receive side shared by every Transport implementation — one
// FIFO per (source rank, tag), waits with deadlines, and the bookkeeping of
// lost peers and closing.
//
// Thread-safety: every method may be called from several threads at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "distributed/transport.h"

namespace inferno {

class Mailbox {
 public:
  // `lost_grace`: how long after MarkPeerLost a waiter keeps waiting for
  // messages of that peer still in flight before failing with PeerLost.
  Mailbox(int world_size, std::chrono::milliseconds lost_grace);

  // Queues `message` from `source` (in [0, world_size)). Dropped once closed.
  void Deliver(int source, Message message);

  // Records that `source` is gone. Queued messages stay receivable.
  void MarkPeerLost(int source);

  // Records that `source` closed in order after everything it sent had
  // arrived: queued messages stay receivable, and a Take that finds none
  // fails with PeerLost at once instead of after the lost grace.
  void MarkPeerDeparted(int source);

  // Records that `source` gave up on the job because of `reason`: pending and
  // later Take calls for any source fail at once with PeerLost naming
  // `source` and quoting `reason` (which names the rank and op that failed
  // there), so every rank reports the fault that ended the job rather than
  // a neighbour that stopped answering because of it.
  void MarkJobAborted(int source, const std::string& reason);

  // Records that `source` no longer takes part, as its peers' liveness watch
  // judged (`why`: e.g. "sent no heartbeat for 1500 ms"): like
  // MarkJobAborted, pending and later Take calls for any source fail at once
  // with PeerLost naming `source` and saying `why`.
  void MarkPeerUnresponsive(int source, const std::string& why);

  // OK until an abort notice has been recorded (MarkJobAborted or
  // MarkPeerUnresponsive); then PeerLost naming the rank, as a Take would
  // fail. For waits outside the mailbox that must end on a notice too
  // (RoutedTransport's waits on its other transport).
  Status JobAborted();

  // Wakes every waiter; pending and later Take calls fail with Closed.
  void Close();

  // Removes and returns the oldest message from `source` with `tag`.
  // Errors: UnknownRank, Timeout at `deadline`, PeerLost, Closed.
  Result<Message> Take(int source, uint32_t tag, Deadline deadline);

  // Like Take, but gives up early at `wake_by` (<= deadline) or when woken by
  // WakeAll, returning nullopt, so that the caller can do other work (such as
  // reading a socket) and call again. `started`: when the caller began
  // waiting, for the Timeout message.
  Result<std::optional<Message>> TakeUntil(int source, uint32_t tag, Deadline started, Deadline deadline,
                                           Deadline wake_by);

  // Wakes every TakeUntil waiter.
  void WakeAll();

 private:
  struct SourceQueues {
    std::mutex mutex;
    std::condition_variable arrived;
    std::unordered_map<uint32_t, std::deque<Message>> by_tag;
    std::optional<Deadline> lost_at;
    bool departed = false;
    // (source, what it did: "gave up on the job: <reason>", "is unresponsive: <why>")
    std::optional<std::pair<int, std::string>> aborted_by;
    bool closed = false;
    uint64_t wakeups = 0;  // incremented by WakeAll
  };

  const std::chrono::milliseconds lost_grace_;
  // Records the first job-ending fault, `what` said of rank `source`.
  void MarkJobEnded(int source, const std::string& what);

  std::vector<std::unique_ptr<SourceQueues>> sources_;
};

}  // namespace inferno
