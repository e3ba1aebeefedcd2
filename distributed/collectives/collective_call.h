// GroupState and CollectiveCall: what every collective of a ProcessGroup is
// built from. GroupState is what every copy of one group shares (its
// members, sequence numbers, its shared-memory area, frames kept for later
// collectives); CollectiveCall is one invocation of one collective on one
// rank: frames it sends carry its op, sequence number and length, frames it
// receives must carry the same, and a failure is told to the other members.
//
// Each collective (all_reduce.h, all_gather.h, ...) opens a CollectiveCall
// with its CollectiveSpec (op code, and whether it runs in the group's
// shared-memory area when every member shares memory) and runs its body in
// it; that spec is the one place an op's per-op knowledge lives.
//
// Thread-safety: a GroupState's collectives run one at a time (the callers
// of one group issue its collectives in one order, never racing two), from
// any thread; `next_sequence` and `group_ids` are safe from any thread. A
// CollectiveCall is used by the thread that made it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/shm/collective_area.h"
#include "distributed/transport.h"

namespace inferno {

// Hands out group ids; shared by a root group and every group split from it.
struct GroupIdAllocator {
  std::mutex mutex;
  uint32_t next = 1;  // 0 is the root group
};

// What every copy of one group shares.
struct GroupState {
  std::shared_ptr<Transport> transport;
  std::vector<int> members;  // group rank -> transport rank
  int rank = 0;              // this rank within the group
  uint32_t group_id = 0;
  std::atomic<uint64_t> next_sequence{0};
  std::shared_ptr<GroupIdAllocator> group_ids;
  // Set up by the group's first collective that runs in the area (group_area.h)
  // when every member shares memory with this rank (SharesMemory); used
  // only by collectives, which the callers never race against each other.
  std::unique_ptr<CollectiveArea> area;
  // Sequence numbers of this group's collectives that failed on this rank,
  // oldest first, at most kRememberedFailures: peers may have sent (or still
  // send) frames for them, which a later collective drops instead of taking
  // them for its own. Used only by collectives, like `area`.
  std::deque<uint64_t> failed_sequences;
  // Per group rank (one entry per member, sized with `members`), frames of
  // a later collective than the one that received them (their sender had
  // gone on), oldest first: the collective they belong to takes them before
  // reading the transport. Used only by collectives.
  std::vector<std::deque<Message>> ahead;

  int size() const { return static_cast<int>(members.size()); }
  // Whether the group has two or more members and this rank shares memory
  // with every one (the transport's routing is fixed, and symmetric, so
  // every member decides alike).
  bool SharesMemory() const;
  uint32_t collective_tag() const { return kTagReservedBase + group_id; }
  bool Failed(uint64_t sequence) const;
  void RememberFailed(uint64_t sequence);
  Deadline NextDeadline() const { return Clock::now() + transport->timeout(); }
};

// What a collective is, for the call machinery: its op code (on the wire),
// and whether it runs in the group's CollectiveArea when every member shares
// memory (else it always runs over messages).
struct CollectiveSpec {
  CollectiveOp op;
  bool runs_in_area;
};

// Adds `context: ` in front of `error`'s message, unless the message starts
// with `context` already.
Error WithContext(Error error, const std::string& context);

class CollectiveCall {
 public:
  // The group's next collective, of kind `spec`, `element_count` long on
  // this rank (checked against the peers').
  CollectiveCall(GroupState& state, CollectiveSpec spec, uint64_t element_count)
      : CollectiveCall(state, spec, element_count, state.next_sequence.fetch_add(1)) {}
  // A call with the sequence number of `within`, which it is part of (the
  // setup of the group's area: members that fail the collective before
  // reaching that step stay in step with those that do not).
  CollectiveCall(GroupState& state, CollectiveSpec spec, uint64_t element_count, const CollectiveCall& within)
      : CollectiveCall(state, spec, element_count, within.sequence_) {}
  CollectiveCall(const CollectiveCall&) = delete;
  CollectiveCall& operator=(const CollectiveCall&) = delete;
  ~CollectiveCall();

  // Runs the collective's `body` (returning Status or Result<T>) and
  // returns what it returns. A call whose body fails (or that never ran
  // one) is remembered as failed by the group when it ends, so that frames
  // peers sent for it are dropped. When it fails:
  // - of an op that runs in the group's CollectiveArea (every member shares
  //   memory): the group drops its area (whose counters the members may no
  //   longer agree on; every member fails the same collective), and the
  //   next such collective sets up a new one;
  // - from a fault of this rank's call (a length, op or argument that does
  //   not match, or a peer's notice of one), unless every member saw it in
  //   the area: every other member is told (SendFailure; announced in the
  //   area when this rank failed before entering it), so that those
  //   waiting for this rank fail at once, quoting its error, instead of at
  //   their deadline.
  template <typename Body>
  auto Run(Body body) {
    auto result = body();
    succeeded_ = static_cast<bool>(result);
    if (!succeeded_) AfterFailure(result.error());
    return result;
  }

  // Marks this call as running in the group's CollectiveArea (its members
  // see one another's faults there).
  void EnterArea() { in_area_ = true; }

  // Tells the group's CollectiveArea, if it has one, that this rank is in
  // this collective (for the mismatch checks of peers waiting there).
  void Announce();

  int rank() const { return state_.rank; }
  int size() const { return state_.size(); }
  AreaStamp stamp() const { return {spec_.op, sequence_, element_count_}; }

  // "all_reduce #4 of group 0 (rank 1 of 4)".
  std::string Describe() const;

  // "<Describe()> from rank <peer>".
  std::string From(int peer) const { return Describe() + " from rank " + std::to_string(peer); }

  // Sends `bytes` to group rank `peer`; returns once they are queued (they
  // may be modified at once), without waiting for the peer to receive them.
  Status Send(int peer, std::span<const std::byte> bytes);

  // Receives the next frame of this collective from group rank `peer`,
  // dropping what is left of earlier collectives (frames of one that failed
  // on this rank, and failure notices). A frame of a later collective (the
  // peer has gone on) is kept for that collective, and this call fails with
  // a CollectiveMismatch. `check_length`: the peer's element_count must
  // equal ours. A failure the peer sent (SendFailure) is a
  // CollectiveMismatch quoting it.
  Result<Message> Recv(int peer, bool check_length);

  // Receives a frame from `peer` (its length checked) that must hold
  // exactly `expected_bytes`, and returns its payload; else LengthMismatch.
  Result<Payload> RecvExactly(int peer, size_t expected_bytes);

 private:
  CollectiveCall(GroupState& state, CollectiveSpec spec, uint64_t element_count, uint64_t sequence);

  // Run's handling of a failed body (see Run).
  void AfterFailure(const Error& error);
  // Tells group rank `peer` that this rank failed the collective with
  // `error` and sends it nothing more, so that its Recv fails at once
  // naming the cause rather than waiting out its deadline.
  Status SendFailure(int peer, const Error& error);
  // The oldest frame from group rank `peer` kept for a later collective,
  // else the next from the transport.
  Result<Message> TakeFrame(int peer, Deadline deadline);
  bool RunsInArea() const { return spec_.runs_in_area && state_.SharesMemory(); }
  bool IsLeftOver(const FrameKey& key) const;

  GroupState& state_;
  const CollectiveSpec spec_;
  const uint64_t sequence_;
  const uint64_t element_count_;
  bool succeeded_ = false;
  bool in_area_ = false;
};

}  // namespace inferno
