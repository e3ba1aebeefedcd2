// ProcessGroup: a handle to a collective-communication world — this rank, the
// world size, and the Transport that connects the ranks.
//
// Cheap to copy: copies share the transport (and its connections), so one group
// can be handed to the generator loop, the weight loader and per-layer ops.
// A sub-group (Split) is a ProcessGroup over a subset of ranks that shares the
// same transport; its ranks are renumbered 0..n-1 in the order given.
//
// Semantics (as MPI):
// - Point-to-point: between two ranks, messages with the same tag arrive in the
//   order they were sent. User tags must be < kTagReservedBase; larger tags are
//   reserved for collectives and rejected with InvalidTag in every build mode.
// - Collectives on one group must be called in the same order on all its
//   ranks. When they are not, the mismatch is detected and reported as
//   CollectiveMismatch (naming the op and sequence number on both sides),
//   never hung on or silently mixed.
// - Every wait has a deadline (the transport's timeout); a lost peer gives
//   PeerLost or Timeout naming the peer and the op.
// - Point-to-point tags are per pair of ranks of the transport: a sub-group
//   and its parent share them (collectives never do: each group's collectives
//   travel under its own reserved tag).
// - A rank whose own call is at fault (its length, op or arguments do not
//   match) tells every other member, which fail at once quoting its error.
// - After a failed collective the group stays usable: frames peers sent for
//   it (and late failure notices) are dropped when met (the group remembers
//   its last 256 failures), and a group on a shared segment sets up a new
//   one. A lost peer still fails every later collective that needs it.
// - Build one ProcessGroup per transport and copy it; two groups constructed
//   separately over one transport would both be group 0.
//
// Each collective lives in its own file of distributed/collectives/, its
// message algorithm and its shared-memory variant side by side: on a group
// of two or more ranks that all share memory with each other
// (Transport::SharesMemoryWith: one host, connected over shared memory),
// all_reduce, all_gather, broadcast, reduce_scatter and barrier run in a
// shared segment of the group's own (set up by the group's first of them):
// each rank writes its input there once and reads the others' straight from
// their slots; reductions run in rank order, so every rank gets the same
// bits. Otherwise all_reduce uses recursive doubling for small buffers and
// on two ranks, else a ring reduce-scatter + all-gather pipelined in 1 MiB
// segments; all_gather and reduce_scatter use the same ring; broadcast a
// binomial tree (small) or a pipelined chain (large); barrier dissemination.
//
// Typed collectives: all_reduce takes float or int32 buffers, all_gather and
// broadcast float, int32 or bytes. Only the element count travels, not the
// type: every rank of one collective must pass the same element type (as
// with MPI datatypes); a float broadcast met by an int32 one of the same
// length is not detected.
//
// Thread-safety: all methods may be called from several threads at once.
// Point-to-point calls may run concurrently with a collective. Collectives of
// one group must be issued in the same order on every rank, so callers must not
// race two collectives of the same group against each other.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/error.h"
#include "distributed/reduce.h"
#include "distributed/transport.h"

namespace inferno {

struct GroupState;  // distributed/collectives/collective_call.h

class ProcessGroup {
 public:
  explicit ProcessGroup(std::shared_ptr<Transport> transport);

  int rank() const;
  int world_size() const;
  // True on rank 0: the place to print, sample and own the final logits.
  bool is_leader() const { return rank() == 0; }
  const std::shared_ptr<Transport>& transport() const;

  // Returns once every rank of the group has entered the barrier.
  Status barrier();

  // Point-to-point. `to`/`from` are ranks of this group. The length of a
  // received message comes from the wire.
  Status send_f32(int to, uint32_t tag, std::span<const float> data);
  Result<std::vector<float>> recv_f32(int from, uint32_t tag);
  Status send_i32(int to, uint32_t tag, std::span<const int32_t> data);
  Result<std::vector<int32_t>> recv_i32(int from, uint32_t tag);
  Status send_bytes(int to, uint32_t tag, std::span<const std::byte> data);
  Result<std::vector<std::byte>> recv_bytes(int from, uint32_t tag);

  // The hot path's pair, for messages made of a header and a buffer: no copy
  // beyond the one the transport makes.
  //
  // Sends one message, the bytes of `head` followed by those of `tail`, as
  // send_bytes of their concatenation would (the receiver cannot tell), but
  // without the caller concatenating them: the transport copies each byte
  // once into its own buffers, and the caller may reuse both spans on return.
  Status send_bytes(int to, uint32_t tag, std::span<const std::byte> head, std::span<const std::byte> tail);
  // Receives the next message from `from` with `tag`, like recv_bytes, but
  // returns a view of the bytes the transport received instead of a copy:
  // the Payload owns them (or shares their owner), so they stay valid and
  // unchanged as long as the Payload or a copy of it lives (drop it before
  // the transport is destroyed), and any thread may read them. Its size is
  // the sent length, from the wire; no alignment is promised (read values
  // with memcpy). Errors as recv_bytes: InvalidTag, UnknownRank, and the
  // transport's (Timeout, PeerLost, Closed) prefixed with
  // "recv from rank <from> tag <tag>".
  Result<Payload> recv_payload(int from, uint32_t tag);

  // In place: on return every rank's `data` holds op(every rank's input),
  // element-wise. Lengths must match across ranks (else LengthMismatch).
  // int32 sums and products wrap modulo 2^32; kMean of int32 rounds toward
  // zero.
  Status all_reduce(std::span<float> data, ReduceKind op);
  Status all_reduce(std::span<int32_t> data, ReduceKind op);

  // Returns every rank's `data` concatenated in rank order
  // (length world_size × n). Lengths must match across ranks.
  Result<std::vector<float>> all_gather(std::span<const float> data);
  // The same into the caller's `out` (world_size × data.size() elements, else
  // InvalidArgument): rank i's `data` lands at [i × n, (i + 1) × n).
  Status all_gather(std::span<const float> data, std::span<float> out);
  Status all_gather(std::span<const int32_t> data, std::span<int32_t> out);
  Status all_gather(std::span<const std::byte> data, std::span<std::byte> out);

  // On non-roots `data` is overwritten with the root's; its length must match
  // the root's, else LengthMismatch on that rank and on the root (over
  // messages, each receiver sends the root its length first). UnknownRank
  // when `root` is outside the group.
  Status broadcast(int root, std::span<float> data);
  Status broadcast(int root, std::span<int32_t> data);
  Status broadcast(int root, std::span<std::byte> data);

  // Reduces `data` (length world_size × n) element-wise across ranks; rank i
  // receives block i (length n). Length must be divisible by world_size.
  Result<std::vector<float>> reduce_scatter(std::span<const float> data, ReduceKind op);

  // On `root`: every rank's blob in rank order (blobs may differ in size).
  // On other ranks: an empty vector.
  Result<std::vector<std::vector<std::byte>>> gather(int root, std::span<const std::byte> data);

  // On `root`, `blobs` holds world_size blobs (sizes may differ); rank i
  // receives blobs[i]. `blobs` is ignored on other ranks. When the root has
  // not world_size blobs it fails with InvalidArgument, and every other rank
  // at once with a CollectiveMismatch quoting it.
  Result<std::vector<std::byte>> scatter(int root, const std::vector<std::vector<std::byte>>& blobs);

  // A group over `ranks` (ranks of this group, distinct, in the new order),
  // sharing this group's transport. Every rank of this group calls Split with
  // the same `ranks` (it is a collective of this group); ranks not listed get
  // InvalidArgument.
  Result<ProcessGroup> Split(std::span<const int> ranks);

 private:
  std::shared_ptr<GroupState> state_;
};

}  // namespace inferno
