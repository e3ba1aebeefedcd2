// Transport: the point-to-point layer under ProcessGroup. A small interface in
// the spirit of gloo's transport::Pair: this rank, the world size, send bytes
// to a peer under a frame key, receive the oldest message from a peer with a
// given tag before a deadline, close. Implementations: inproc/ (ranks as
// threads), zmq/ (processes, over tcp:// or ipc://), shm/ (processes of one
// host, over shared memory), tcp/ (data between hosts over plain sealed TCP,
// beside ZeroMQ's control plane) and routed/ (each peer's data over one of
// two of them). Collectives live above it, in distributed/collectives/, one file
// per collective: its algorithm over messages, written once for every
// implementation, and beside it its variant in a shared segment, which a
// group uses instead when SharesMemoryWith holds for every member.
//
// Thread-safety: every method of every implementation may be called from
// several threads at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "distributed/frame_header.h"

namespace inferno {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// What a message carries besides its bytes; travels in every frame header.
struct FrameKey {
  uint32_t tag = 0;
  CollectiveOp op = CollectiveOp::kPointToPoint;
  // The sending group's collective sequence number (0 for point-to-point).
  uint64_t sequence = 0;
  // The collective's total length on the sender, in elements (0 if unused).
  uint64_t element_count = 0;
};

// Received bytes plus whatever keeps them alive (a ZeroMQ message, a vector),
// so a transport can hand over what it received without copying.
// Thread-safety: a value type; the bytes are immutable.
class Payload {
 public:
  Payload() = default;
  explicit Payload(std::vector<std::byte> bytes) {
    auto owned = std::make_shared<std::vector<std::byte>>(std::move(bytes));
    bytes_ = std::span<const std::byte>(*owned);
    owner_ = std::move(owned);
  }
  // `bytes` must stay valid as long as `owner` lives.
  Payload(std::shared_ptr<const void> owner, std::span<const std::byte> bytes)
      : owner_(std::move(owner)), bytes_(bytes) {}

  std::span<const std::byte> bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  std::shared_ptr<const void> owner_;
  std::span<const std::byte> bytes_;
};

// A Payload holding a copy of `head` followed by `tail` (for transports that
// deliver a sent message by copying it into the receiver's queue).
inline Payload ConcatenatedPayload(std::span<const std::byte> head, std::span<const std::byte> tail) {
  std::vector<std::byte> bytes;
  bytes.reserve(head.size() + tail.size());
  bytes.insert(bytes.end(), head.begin(), head.end());
  bytes.insert(bytes.end(), tail.begin(), tail.end());
  return Payload(std::move(bytes));
}

struct Message {
  FrameKey key;
  Payload payload;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // How long one wait may take; callers derive deadlines from it.
  virtual std::chrono::milliseconds timeout() const = 0;

  // Sends one message to `peer` (any rank, including this one) under `key`:
  // the bytes of `head` followed by those of `tail` (a gather: the receiver
  // sees one payload, and the caller need not concatenate them, e.g. a header
  // and the buffer it describes; each byte is copied once, into the
  // transport's own buffers). Returns once the payload is queued (copied):
  // the caller may modify or free it at once, and the call never waits on the
  // peer beyond `deadline`, even when the peer is dead. Between two ranks,
  // messages with the same tag arrive in the order they were sent.
  // Errors: UnknownRank, PeerLost, Timeout (could not queue the bytes by
  // `deadline`), Closed, Transport.
  virtual Status Send(int peer, const FrameKey& key, std::span<const std::byte> head,
                      std::span<const std::byte> tail, Deadline deadline) = 0;

  // Send of `payload` alone.
  Status Send(int peer, const FrameKey& key, std::span<const std::byte> payload, Deadline deadline) {
    return Send(peer, key, payload, {}, deadline);
  }

  // Returns the oldest message from `peer` with tag `tag`.
  // Errors: UnknownRank, Timeout (nothing arrived by `deadline`), PeerLost
  // (the peer is gone and nothing of it is queued), Closed.
  virtual Result<Message> Recv(int peer, uint32_t tag, Deadline deadline) = 0;

  // Whether this rank and `peer` reach each other through memory they both
  // map (processes of one host connected over shared memory, not ZeroMQ):
  // then a group of such ranks may run its collectives in a shared segment
  // of its own instead of in messages. False unless a transport says so.
  virtual bool SharesMemoryWith(int peer) const {
    (void)peer;
    return false;
  }

  // OK until this rank has received an abort notice (Abort on a peer); then
  // PeerLost naming the rank that gave up and quoting its reason, as a
  // pending Recv fails. Never waits. For waits outside the transport that
  // must end on a notice too (a group's collectives in shared memory). OK
  // unless a transport says otherwise.
  virtual Status CheckAbortNotices() { return {}; }

  // The ranks this rank's liveness watch has found lost, lowest first: peers
  // judged unresponsive (stopped, frozen, unreachable or hung) and peers
  // whose connection or process ended without a goodbye or abort notice;
  // and this rank itself once it finds that it was frozen or stalled for the
  // watch's limit, since its peers then judge it lost. Never waits; valid
  // until Close or Abort. Empty unless a transport says otherwise (the
  // ZeroMQ control plane every multi-process job has; RoutedTransport asks
  // its control transport).
  virtual std::vector<int> LostRanks() const { return {}; }

  // Stops the transport; pending and later calls fail with Closed; peers'
  // Recv from this rank fail with PeerLost once its messages are taken.
  // Idempotent.
  virtual void Close() = 0;

  // Tells every peer, without waiting on any, that this rank gives up on the
  // job because of `reason` (one line naming what failed, e.g. the error of
  // the op that failed here), then closes like Close. On each peer that gets
  // the notice, pending and later Recv from any rank fail with PeerLost
  // naming this rank and quoting `reason`.
  virtual void Abort(const std::string& reason) = 0;
};

}  // namespace inferno
