// ShmTransport: a Transport between ranks on one host, over shared memory.
//
// Each rank creates one inbox: a SharedSegment holding, for every other rank
// j, an abort-notice slot and a ShmRing (ring.h) that only j writes and only
// this rank reads. A rank connects by opening every peer's inbox (by its
// SegmentAddress, exchanged by whoever starts the ranks: the rendezvous, or
// a test) and attaching a writer to its own ring there; a hello record on
// every ring proves both directions, after which each rank stops sharing its
// inbox (no process can open it any more; see segment.h).
//
// Sending copies the message into the peer's ring (streaming it through in
// pieces when larger than the ring). Receiving happens in the callers'
// threads: for each peer, one Recv caller at a time reads that peer's ring;
// messages with other tags go into a Mailbox, where concurrent callers find
// theirs. Every wait has the caller's deadline; between futex sleeps (at most
// WaitPolicy::check_interval long) a waiter checks the peer's pidfd
// (peer_watch.h) and this rank's abort notices, so a dead peer or an abort
// ends waits early: PeerLost naming the rank. Close marks every ring closed:
// a peer reading this rank's ring gets PeerLost after the last message.
// Abort writes the reason into every peer's notice slot for this rank and
// rings their doorbells, then closes; each peer's waits, on any rank, fail
// with PeerLost quoting it (within one check_interval).
//
// Thread-safety: Send, Recv, Close and Abort may be called from several
// threads at once once Connect has returned; Create and Connect are called
// once, by one thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/shm/doorbell.h"
#include "distributed/shm/segment.h"
#include "distributed/transport.h"

namespace inferno {

struct ShmTransportOptions {
  int rank = 0;
  int world_size = 1;
  // Transport::timeout(): how long one wait may take.
  std::chrono::milliseconds timeout{60000};
  // Data bytes of each ring (a power of two); the inbox holds world_size - 1.
  size_t ring_capacity = size_t{1} << 20;
  // Spin and sleep slices of every wait (its `check` is the transport's own).
  WaitPolicy wait;
  // Unset, or run between the sleeps of every wait, after this transport's
  // own checks: an error ends the wait with it. The rendezvous passes in the
  // abort notices and the liveness verdicts (stopped or hung peers) of the
  // job's ZeroMQ control plane this way.
  std::function<Status()> also_check;
};

class ShmTransport : public Transport {
 public:
  // Creates this rank's inbox. Errors: InvalidArgument (rank outside the
  // world, capacity not a power of two >= 64), Io (the segment).
  static Result<std::shared_ptr<ShmTransport>> Create(const ShmTransportOptions& options);

  ~ShmTransport() override;

  // Where peers find this rank's inbox (give it to every peer's Connect).
  SegmentAddress inbox() const;

  // Opens the inbox of every peer that has one (`inboxes[i]` is rank i's;
  // this rank's entry is ignored; a peer without one is not reachable over
  // this transport: Send and Recv naming it fail with InvalidArgument, and
  // it must leave this rank out likewise), says hello on every such ring and
  // waits for every such peer's hello, then stops sharing this rank's inbox.
  // Every rank connected here must call it by `deadline`.
  // Errors: InvalidArgument (wrong table size, called twice), PeerLost or Io
  // naming the rank whose inbox could not be opened, Timeout naming a rank
  // that did not say hello.
  Status Connect(const std::vector<std::optional<SegmentAddress>>& inboxes, Deadline deadline);

  int rank() const override;
  int world_size() const override;
  std::chrono::milliseconds timeout() const override;
  using Transport::Send;
  Status Send(int peer, const FrameKey& key, std::span<const std::byte> head, std::span<const std::byte> tail,
              Deadline deadline) override;
  Result<Message> Recv(int peer, uint32_t tag, Deadline deadline) override;
  // True for this rank and for every peer Connect connected.
  bool SharesMemoryWith(int peer) const override;
  // Reads this rank's abort notice slots (and runs `also_check`).
  Status CheckAbortNotices() override;
  void Close() override;
  void Abort(const std::string& reason) override;

 private:
  struct Impl;
  explicit ShmTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferno
