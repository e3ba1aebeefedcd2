// CollectiveArea: a shared segment that the ranks of one group, all on one
// host, use to run collectives without messages: each rank has a slot and
// writes its input there once, then reads its peers' slots directly
// (all_reduce, all_gather, broadcast, reduce_scatter, barrier).
//
// Layout (one SharedSegment, every part 64-byte aligned; all-zero bytes are
// the initial state, so a fresh segment needs no formatting):
//   [0, 64)        the group's Doorbell (every wait of every member sleeps
//                  on it; a member rings it after publishing anything)
//   member lines   one 64-byte line per member r, written only by r: its pid,
//                  `posted` (chunks r has written, ever), `reduced` (chunks
//                  whose slice r has reduced, ever; all_reduce), `done`
//                  (chunks r has finished reading, ever), and the op and
//                  sequence number of the collective r is in (see Announce)
//   slot headers   per member, two 64-byte lines (one per buffer): the op,
//                  sequence number, element count, broadcast root and chunk
//                  number of what the buffer holds
//   slots          per member, two buffers of kAreaSlotBytes
// A collective moves its data in chunks of at most kAreaSlotBytes; chunk k
// (counted over every collective the area has run) uses buffer k % 2, so a
// member may write chunk k + 1 while a slow peer still reads chunk k, and
// back-to-back collectives need no barrier between them. Before writing
// chunk k a member waits until every member is done with chunk k - 2 (the
// same buffer). Every member posts every chunk, also when it has no data to
// write (a broadcast's receivers): its header carries its stamp, so every
// member, the broadcast root included, checks every other member's op,
// sequence number, length and root before it reads.
//
// all_reduce of a chunk of at least kSliceReduceElements: member r reduces
// only slice r of the chunk (the chunk cut into as many slices as members),
// reading slice r of every slot, and writes the result over slice r of its
// own slot, which no other member reads until every member has marked its
// slice reduced; then every member copies each slice out of the slot of the
// member that reduced it. Each member reads the chunk about twice instead of
// once per member. Smaller chunks are reduced whole by every member, which
// saves the extra wait. Either way the reduction runs in member order, so
// every member gets the same bits.
//
// Every wait has the caller's deadline (plus kPeerAliveGrace when the member
// it waits for runs, as shm transport waits do); before sleeping and between sleeps
// it runs the caller's check (ProcessGroup passes its transport's abort
// notices, so a member that gave up is reported with its reason rather than
// as a process that ended), checks every member's pid (PeerWatch: a dead
// member gives PeerLost naming it at once) and whether a member has
// announced the same sequence number for another op (CollectiveMismatch,
// rather than a Timeout, when a peer runs a different collective that does
// not use the area).
//
// Thread-safety: one thread at a time per member calls the collectives and
// Announce (the members of one group run their collectives in one order);
// any thread may destroy it afterwards. The memory is shared with the other
// members' processes (or threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/reduce.h"
#include "distributed/shm/doorbell.h"
#include "distributed/shm/peer_watch.h"
#include "distributed/shm/segment.h"
#include "distributed/transport.h"

namespace inferno {

// Bytes of one slot buffer: the largest chunk a collective moves at once.
inline constexpr size_t kAreaSlotBytes = size_t{256} << 10;

// all_reduce chunks of at least this many elements are reduced a slice per
// member (see the layout comment above); smaller ones whole by every member.
inline constexpr size_t kSliceReduceElements = 16384;

// Which collective a member is in (the parts of a FrameKey that identify it).
struct AreaStamp {
  CollectiveOp op = CollectiveOp::kPointToPoint;
  uint64_t sequence = 0;
  uint64_t element_count = 0;
  int root = 0;  // a broadcast's root (member number); 0 for other ops
};

class CollectiveArea {
 public:
  // Creates the area of a group of `size` (>= 1) members as member `rank`.
  // Errors: InvalidArgument (rank outside the group), Io (the segment).
  static Result<std::unique_ptr<CollectiveArea>> Create(int rank, int size);

  // Maps the area that member 0 created at `address`, as member `rank`.
  // Errors: InvalidArgument (rank outside the group, or a segment of the
  // wrong size for `size` members), and SharedSegment::Open's.
  static Result<std::unique_ptr<CollectiveArea>> Open(const SegmentAddress& address, int rank, int size);

  // Where the other members find the area (creator only; see segment.h).
  SegmentAddress address() const { return segment_.address(); }

  // Stops sharing the segment: call on the creator once every member has
  // opened it (no process can open it afterwards).
  void StopSharing() { segment_.StopSharing(); }

  // Starts watching every member's process, and makes every later wait run
  // `also_check` (unset, or e.g. the transport's abort notices) before
  // looking at the members: its error ends the wait. `job_ranks[m]` is
  // member m's rank in the job (its transport's rank), which PeerLost and
  // Timeout errors name, so that a member of a sub-group is named as every
  // other message of the job names it. Call once every member has opened the
  // area (each writes its pid when it does). Errors: PeerLost (a member
  // already ended), Io (pidfd_open), InvalidArgument (a member has not
  // written its pid, or job_ranks has not one entry per member).
  Status WatchMembers(std::vector<int> job_ranks, std::function<Status()> also_check);

  // Says which collective this member is in (for the mismatch check of the
  // peers' waits). Cheap: two stores.
  void Announce(CollectiveOp op, uint64_t sequence);
  // Says that this member failed collective `sequence` without entering the
  // area (e.g. a bad argument): the peers waiting in it fail at once with a
  // CollectiveMismatch naming this member, instead of at their deadline.
  void AnnounceFailed(uint64_t sequence) { Announce(CollectiveOp::kAbort, sequence); }

  // In place: on return `data` holds op(every member's `data`), element-wise,
  // reduced in member order (member 0's value, op member 1's, ...), so every
  // member gets the same bits and no member's result depends on which member
  // computed it. kMean divides the sum by the group size. `stamp` must equal
  // every member's (op, sequence number) and its element_count be
  // data.size(). `describe` names this collective on this rank, for error
  // messages. Errors: LengthMismatch (a member's element count differs),
  // CollectiveMismatch (a member is in another collective), PeerLost (a
  // member's process ended), Timeout (a member did not arrive by
  // `deadline`). After an error the area must not be used again.
  Status AllReduce(std::span<float> data, ReduceKind op, const AreaStamp& stamp, Deadline deadline,
                   const std::function<std::string()>& describe);

  // `out` (size × data.size() elements) receives every member's `data` in
  // member order: member m's at [m × data.size(), (m + 1) × data.size()).
  // `stamp.element_count` is data.size(). Errors as AllReduce.
  Status AllGather(std::span<const float> data, std::span<float> out, const AreaStamp& stamp,
                   Deadline deadline, const std::function<std::string()>& describe);

  // On every member but `stamp.root`, `data` is overwritten with the root's.
  // Every member, the root included, checks every other member's length and
  // root: LengthMismatch, or CollectiveMismatch naming the other root, on
  // every member. Errors otherwise as AllReduce.
  Status Broadcast(std::span<float> data, const AreaStamp& stamp, Deadline deadline,
                   const std::function<std::string()>& describe);

  // `data` is size × n elements, block b = [b × n, (b + 1) × n); `out` (n
  // elements) receives op(every member's block `rank`), element-wise, reduced
  // in member order. `stamp.element_count` is data.size(), a multiple of the
  // group size. Errors as AllReduce.
  Status ReduceScatter(std::span<const float> data, std::span<float> out, ReduceKind op,
                       const AreaStamp& stamp, Deadline deadline,
                       const std::function<std::string()>& describe);

  // Returns once every member has entered the barrier of `stamp` (an
  // AllReduce of no elements). Errors as AllReduce.
  Status Barrier(const AreaStamp& stamp, Deadline deadline, const std::function<std::string()>& describe) {
    return AllReduce({}, ReduceKind::kSum, stamp, deadline, describe);
  }

 private:
  struct MemberLine;
  struct SlotHeader;

  CollectiveArea(SharedSegment segment, int rank, int size);

  MemberLine& Member(int member) const;
  SlotHeader& Header(int member, int buffer) const;
  std::span<std::byte> Slot(int member, int buffer) const;
  Doorbell& Bell() const;

  // Waits until `arrived(member)` holds for every member. `what` says what
  // is awaited, for the Timeout message.
  Status AwaitAll(const std::function<bool(int)>& arrived, const AreaStamp& stamp, Deadline deadline,
                  const std::function<std::string()>& describe, const char* what);
  // Runs one collective of `chunks` (>= 1) chunks, the protocol every
  // collective shares: for chunk `index`, waits until this member's buffer is
  // free, `write(index, slot)` fills this member's slot (it may write
  // nothing), posts it, waits until every member has posted, checks their
  // headers against `stamp`; then, when `reduce_slice(index, buffer)` is
  // given and returns true (it reduced this member's slice into its own
  // slot), marks the chunk reduced and waits until every member has; then
  // `read(index, buffer)` reads the members' slots of `buffer`, and the
  // chunk is marked done.
  Status RunChunks(size_t chunks, const AreaStamp& stamp, Deadline deadline,
                   const std::function<std::string()>& describe,
                   const std::function<void(size_t, std::span<std::byte>)>& write,
                   const std::function<bool(size_t, int)>& reduce_slice,
                   const std::function<void(size_t, int)>& read);
  // The check between sleeps: dead members and announced mismatches.
  Status CheckMembers(const AreaStamp& stamp, const std::function<std::string()>& describe) const;

  SharedSegment segment_;
  const int rank_;
  const int size_;
  std::vector<int> job_ranks_;      // member -> rank in the job, once watched
  std::vector<PeerWatch> watches_;  // of every other member, once watched
  std::function<Status()> also_check_;
  uint64_t next_chunk_ = 0;  // chunks this member has run, ever
  WaitPolicy wait_;
};

}  // namespace inferno
