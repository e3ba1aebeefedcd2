// CollectiveArea: a shared segment that the ranks of one group, all on one
// host, use to run collectives without messages: each rank has a slot and
// writes its input there once, then reads its peers' slots directly. This
// class is the protocol every such collective shares (RunChunks); each
// collective's use of it lives beside its message version in
// distributed/collectives/ (all_reduce, all_gather, broadcast,
// reduce_scatter, barrier).
//
// Layout (one SharedSegment, every part 64-byte aligned; all-zero bytes are
// the initial state, so a fresh segment needs no formatting):
//   [0, 64)        the group's Doorbell (every wait of every member sleeps
//                  on it; a member rings it after publishing anything)
//   member lines   one 64-byte line per member r, written only by r: its pid,
//                  `posted` (chunks r has written, ever), `reduced` (chunks
//                  whose slice r has reduced, ever; all_reduce), `done`
//                  (chunks r has finished reading, ever), and the op and
//                  sequence number of the collective r is in, in one word
//                  (announcement.h; see Announce)
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
// Every wait has the caller's deadline (plus kPeerAliveGrace when the member
// it waits for runs, as shm transport waits do); before sleeping and between sleeps
// it runs the caller's check (the group passes its transport's abort
// notices, so a member that gave up is reported with its reason rather than
// as a process that ended), checks every member's pid (PeerWatch: a dead
// member gives PeerLost naming it at once) and whether a member has
// announced the same sequence number for another op (CollectiveMismatch,
// rather than a Timeout, when a peer runs a different collective that does
// not use the area).
//
// Thread-safety: one thread at a time per member calls RunChunks (the
// collectives built on it) and Announce (the members of one group run their collectives in one order);
// any thread may destroy it afterwards. The memory is shared with the other
// members' processes (or threads).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/shm/announcement.h"
#include "distributed/shm/doorbell.h"
#include "distributed/shm/peer_watch.h"
#include "distributed/shm/segment.h"
#include "distributed/shm/wait_history.h"
#include "distributed/transport.h"

namespace inferno {

// Bytes of one slot buffer: the largest chunk a collective moves at once.
inline constexpr size_t kAreaSlotBytes = size_t{256} << 10;

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
  // peers' waits). Cheap: one store (announcement.h).
  void Announce(CollectiveOp op, uint64_t sequence);
  // Says that this member failed collective `sequence` without entering the
  // area (e.g. a bad argument): the peers waiting in it fail at once with a
  // CollectiveMismatch naming this member, instead of at their deadline.
  void AnnounceFailed(uint64_t sequence) { Announce(CollectiveOp::kAbort, sequence); }

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Buffer `buffer` (0 or 1) of member `member`'s slot, kAreaSlotBytes.
  // Written only by its member, inside RunChunks' `write` (and, for a
  // reduced slice, `reduce_slice`); read by every member inside `read`.
  std::span<std::byte> Slot(int member, int buffer) const;

  // Runs one collective of `chunks` (>= 1) chunks, the protocol every
  // collective in the area shares: for chunk `index`, waits until this
  // member's buffer is free, `write(index, slot)` fills this member's slot
  // (it may write nothing), posts it, waits until every member has posted,
  // checks their headers against `stamp`; then, when `reduce_slice(index,
  // buffer)` is given and returns true (it reduced this member's slice into
  // its own slot), marks the chunk reduced and waits until every member has;
  // then `read(index, buffer)` reads the members' slots of `buffer`, and the
  // chunk is marked done. Every member must run the same number of chunks
  // for the same `stamp`, whose op and sequence number every member shares
  // and whose element_count and root each member checks against the
  // others'. `describe` names this collective on this rank, for error
  // messages. Errors: LengthMismatch (a member's element count differs),
  // CollectiveMismatch (a member is in another collective, or names another
  // root), PeerLost (a member's process ended), Timeout (a member did not
  // arrive by `deadline`). After an error the area must not be used again.
  Status RunChunks(size_t chunks, const AreaStamp& stamp, Deadline deadline,
                   const std::function<std::string()>& describe,
                   const std::function<void(size_t, std::span<std::byte>)>& write,
                   const std::function<bool(size_t, int)>& reduce_slice,
                   const std::function<void(size_t, int)>& read);

  // The `write` step of a collective to which this member contributes
  // `data` (nothing, when it is empty): chunk `index` of it (kAreaSlotBytes
  // each) into the slot.
  static std::function<void(size_t, std::span<std::byte>)> WriteChunksOf(std::span<const std::byte> data);

 private:
  struct MemberLine;
  struct SlotHeader;

  CollectiveArea(SharedSegment segment, int rank, int size);

  MemberLine& Member(int member) const;
  SlotHeader& Header(int member, int buffer) const;
  Doorbell& Bell() const;

  // Waits until `arrived(member)` holds for every member. `what` says what
  // is awaited, for the Timeout message.
  Status AwaitAll(const std::function<bool(int)>& arrived, const AreaStamp& stamp, Deadline deadline,
                  const std::function<std::string()>& describe, const char* what);
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
  WaitHistory history_;  // of this member's waits in AwaitAll
};

// How many chunks of at most `per_chunk` elements `elements` takes (at least
// one, so that every collective, even of no elements, meets every member).
inline size_t AreaChunkCount(size_t elements, size_t per_chunk) {
  return std::max<size_t>(1, (elements + per_chunk - 1) / per_chunk);
}

// Chunk `index` of `data`, chunks of `per_chunk` elements (empty past the end).
template <typename T>
std::span<T> AreaChunkOf(std::span<T> data, size_t index, size_t per_chunk) {
  const size_t begin = std::min(data.size(), index * per_chunk);
  return data.subspan(begin, std::min(per_chunk, data.size() - begin));
}

// memcpy that accepts null pointers when `bytes` is 0.
inline void CopyBytes(void* to, const void* from, size_t bytes) {
  if (bytes != 0) std::memcpy(to, from, bytes);
}

}  // namespace inferno
