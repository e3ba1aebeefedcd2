#include "distributed/process_group.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "distributed/shm/collective_area.h"
#include "distributed/shm/segment.h"

namespace inferno {
namespace {

// Group ids live in the low bits of the reserved tags: group g's collectives
// travel under tag kTagReservedBase + g, which no user tag can equal.
constexpr uint32_t kMaxGroupId = ~kTagReservedBase;

// Collectives move large buffers in segments of at most this many elements,
// so that transfer of one segment overlaps reduction of the previous one.
constexpr size_t kSegmentElements = kMaxChunkBytes / sizeof(float);

// The element count of a frame that carries its sender's error instead of
// data (CollectiveCall::SendFailure); no collective has that many elements.
constexpr uint64_t kFailedAtSender = ~uint64_t{0};

// How many of its failed collectives a group remembers, to drop the frames
// peers still send for them (GroupState::failed_sequences).
constexpr size_t kRememberedFailures = 256;

// How many segments ExchangeAndReduce keeps queued to the peer ahead of the
// one it reduces.
constexpr size_t kSendAheadSegments = 2;

// all_reduce and broadcast of at most this many bytes use the latency-optimal
// algorithm (recursive doubling, binomial tree); larger ones the ring/chain
// (except all_reduce on two ranks, where recursive doubling is never worse).
constexpr size_t kSmallCollectiveBytes = 64 << 10;

std::span<const std::byte> AsBytes(std::span<const float> data) { return std::as_bytes(data); }

Error WithContext(Error error, const std::string& context) {
  error.message = context + ": " + error.message;
  return error;
}

std::string HexTag(uint32_t tag) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", tag);
  return text;
}

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
  // Set up by the group's first collective (but gather, scatter and Split)
  // when every member
  // shares memory with this rank (SharesMemory); used only by collectives,
  // which the callers never race against each other.
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
  bool SharesMemory() const {
    if (size() < 2) return false;
    for (int member : members) {
      if (!transport->SharesMemoryWith(member)) return false;
    }
    return true;
  }
  uint32_t collective_tag() const { return kTagReservedBase + group_id; }
  bool Failed(uint64_t sequence) const {
    return std::find(failed_sequences.begin(), failed_sequences.end(), sequence) != failed_sequences.end();
  }
  void RememberFailed(uint64_t sequence) {
    if (failed_sequences.size() == kRememberedFailures) failed_sequences.pop_front();
    failed_sequences.push_back(sequence);
  }
  Deadline NextDeadline() const { return Clock::now() + transport->timeout(); }
};

// Splits n elements into `parts` contiguous blocks whose sizes differ by at
// most one (the first n % parts blocks get the extra element).
struct BlockLayout {
  size_t n;
  size_t parts;
  size_t offset(size_t block) const { return block * (n / parts) + std::min(block, n % parts); }
  size_t size(size_t block) const { return n / parts + (block < n % parts ? 1 : 0); }
  size_t max_size() const { return n / parts + (n % parts ? 1 : 0); }
};

// Segment `index` of a block of `block_size` elements: [begin, end) within it.
std::pair<size_t, size_t> SegmentRange(size_t block_size, size_t index) {
  const size_t begin = std::min(block_size, index * kSegmentElements);
  return {begin, std::min(block_size, begin + kSegmentElements)};
}

size_t SegmentCount(size_t max_block_size) {
  return std::max<size_t>(1, (max_block_size + kSegmentElements - 1) / kSegmentElements);
}

// Segment `index` of the whole of `data`.
template <typename T>
std::span<T> Segment(std::span<T> data, size_t index) {
  auto [begin, end] = SegmentRange(data.size(), index);
  return data.subspan(begin, end - begin);
}

// One invocation of a collective on one rank: frames it sends carry its op,
// sequence number and length; frames it receives must carry the same. A
// call whose Run body fails (or that never ran one) is remembered as failed
// by the group when it ends, so that frames peers sent for it are dropped.
class CollectiveCall {
 public:
  CollectiveCall(GroupState& state, CollectiveOp op, uint64_t element_count)
      : CollectiveCall(state, op, element_count, state.next_sequence.fetch_add(1)) {}
  // A call with the sequence number of `within`, which it is part of (the
  // setup of the group's area: members that fail the collective before
  // reaching that step stay in step with those that do not).
  CollectiveCall(GroupState& state, CollectiveOp op, uint64_t element_count, const CollectiveCall& within)
      : CollectiveCall(state, op, element_count, within.sequence_) {}
  CollectiveCall(const CollectiveCall&) = delete;
  CollectiveCall& operator=(const CollectiveCall&) = delete;
  ~CollectiveCall() {
    if (!succeeded_) state_.RememberFailed(sequence_);
  }

  // Runs the collective's `body` (returning Status or Result<T>) and
  // returns what it returns. When it fails:
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
    if (succeeded_) return result;
    const bool tell = IsCallFault(result.error().kind) && !in_area_;
    if (tell && RunsInArea() && state_.area) {
      state_.area->AnnounceFailed(sequence_);
    } else if (tell) {
      for (int peer = 0; peer < size(); ++peer) {
        if (peer != rank()) (void)SendFailure(peer, result.error());  // best effort: the error stands
      }
    }
    if (RunsInArea()) state_.area.reset();
    return result;
  }

  // Marks this call as running in the group's CollectiveArea (its members
  // see one another's faults there).
  void EnterArea() { in_area_ = true; }

  // Tells the group's CollectiveArea, if it has one, that this rank is in
  // this collective (for the mismatch checks of peers waiting there).
  void Announce() {
    if (state_.area) state_.area->Announce(op_, sequence_);
  }

  int rank() const { return state_.rank; }
  int size() const { return state_.size(); }
  AreaStamp stamp() const { return {op_, sequence_, element_count_}; }

  // "all_reduce #4 of group 0 (rank 1 of 4)".
  std::string Describe() const {
    return CollectiveOpName(op_) + " #" + std::to_string(sequence_) + " of group " +
           std::to_string(state_.group_id) + " (rank " + std::to_string(state_.rank) + " of " +
           std::to_string(state_.size()) + ")";
  }

  // "<Describe()> from rank <peer>".
  std::string From(int peer) const { return Describe() + " from rank " + std::to_string(peer); }

  // Sends `bytes` to group rank `peer`; returns once they are queued (they
  // may be modified at once), without waiting for the peer to receive them.
  Status Send(int peer, std::span<const std::byte> bytes) {
    const FrameKey key{state_.collective_tag(), op_, sequence_, element_count_};
    Status sent = state_.transport->Send(state_.members[peer], key, bytes, state_.NextDeadline());
    if (!sent) return WithContext(std::move(sent).error(), Describe() + " to rank " + std::to_string(peer));
    return {};
  }

  // Tells group rank `peer` that this rank failed the collective with
  // `error` and sends it nothing more, so that its Recv fails at once
  // naming the cause rather than waiting out its deadline.
  Status SendFailure(int peer, const Error& error) {
    const FrameKey key{state_.collective_tag(), op_, sequence_, kFailedAtSender};
    const std::string text = error.ToString();
    Status sent = state_.transport->Send(state_.members[peer], key, std::as_bytes(std::span(text)),
                                         state_.NextDeadline());
    if (!sent) return WithContext(std::move(sent).error(), Describe() + " to rank " + std::to_string(peer));
    return {};
  }

  // Receives the next frame of this collective from group rank `peer`,
  // dropping what is left of earlier collectives (frames of one that failed
  // on this rank, and failure notices). A frame of a later collective (the
  // peer has gone on) is kept for that collective, and this call fails with
  // a CollectiveMismatch. `check_length`: the peer's element_count must
  // equal ours. A failure the peer sent (SendFailure) is a
  // CollectiveMismatch quoting it.
  Result<Message> Recv(int peer, bool check_length) {
    const Deadline deadline = state_.NextDeadline();
    Result<Message> received = TakeFrame(peer, deadline);
    while (received && IsLeftOver(received->key)) received = TakeFrame(peer, deadline);
    if (!received) return WithContext(std::move(received).error(), From(peer));
    const FrameKey& key = received->key;
    if (key.op != op_ || key.sequence != sequence_) {
      Error mismatch = Error::CollectiveMismatch(Describe(), CollectiveOpName(key.op) + " #" +
                                                                 std::to_string(key.sequence) + " (rank " +
                                                                 std::to_string(peer) + ")");
      if (key.sequence > sequence_) state_.ahead[peer].push_front(std::move(*received));
      return mismatch;
    }
    if (key.element_count == kFailedAtSender) {
      const std::span<const std::byte> text = received->payload.bytes();
      return Error{ErrorKind::kCollectiveMismatch,
                   Describe() + ": rank " + std::to_string(peer) +
                       " failed it: " + std::string(reinterpret_cast<const char*>(text.data()), text.size())};
    }
    if (check_length && key.element_count != element_count_) {
      return Error::LengthMismatch(From(peer), static_cast<int64_t>(element_count_),
                                   static_cast<int64_t>(key.element_count));
    }
    return received;
  }

  // Receives a frame from `peer` that must hold exactly `expected.size()`
  // floats, and returns its payload.
  Result<Payload> RecvFloats(int peer, size_t expected_elements) {
    Result<Message> received = Recv(peer, /*check_length=*/true);
    if (!received) return std::move(received).error();
    if (received->payload.size() != expected_elements * sizeof(float)) {
      return Error::LengthMismatch(From(peer) + " (segment bytes)",
                                   static_cast<int64_t>(expected_elements * sizeof(float)),
                                   static_cast<int64_t>(received->payload.size()));
    }
    return std::move(received->payload);
  }

 private:
  CollectiveCall(GroupState& state, CollectiveOp op, uint64_t element_count, uint64_t sequence)
      : state_(state), op_(op), sequence_(sequence), element_count_(element_count) {
    Announce();
  }

  // The oldest frame from group rank `peer` kept for a later collective,
  // else the next from the transport.
  Result<Message> TakeFrame(int peer, Deadline deadline) {
    std::deque<Message>& kept = state_.ahead[peer];
    if (!kept.empty()) {
      Message frame = std::move(kept.front());
      kept.pop_front();
      return frame;
    }
    return state_.transport->Recv(state_.members[peer], state_.collective_tag(), deadline);
  }

  bool RunsInArea() const {
    const bool area_op = op_ == CollectiveOp::kBarrier || op_ == CollectiveOp::kAllReduce ||
                         op_ == CollectiveOp::kAllGather || op_ == CollectiveOp::kBroadcast ||
                         op_ == CollectiveOp::kReduceScatter;
    return area_op && state_.SharesMemory();
  }

  // Errors that come from this rank's own call, not from the job's state.
  static bool IsCallFault(ErrorKind kind) {
    return kind == ErrorKind::kLengthMismatch || kind == ErrorKind::kCollectiveMismatch ||
           kind == ErrorKind::kInvalidArgument;
  }

  bool IsLeftOver(const FrameKey& key) const {
    return key.sequence < sequence_ && (key.element_count == kFailedAtSender || state_.Failed(key.sequence));
  }

  GroupState& state_;
  const CollectiveOp op_;
  const uint64_t sequence_;
  const uint64_t element_count_;
  bool succeeded_ = false;
  bool in_area_ = false;
};

void CopyInto(std::span<float> dst, std::span<const std::byte> src) {
  if (!src.empty()) std::memcpy(dst.data(), src.data(), src.size());
}

// The pipelined ring shared by all_reduce, reduce_scatter and all_gather.
// `data` is split into size() blocks by `layout`. With `reduce_scatter`, the
// first size()-1 steps leave block rank() holding op(every rank's block
// rank()); with `all_gather`, the next size()-1 steps give every rank every
// block (each rank starts with its own block rank() final). Step j sends the
// block received in step j-1 to the next rank and receives one from the
// previous rank, segment by segment, so each segment moves on as soon as it
// is reduced.
Status RunRing(CollectiveCall& call, std::span<float> data, const BlockLayout& layout, bool reduce_scatter,
               bool all_gather, ReduceKind op) {
  const int world = call.size();
  const int rank = call.rank();
  const int next = (rank + 1) % world;
  const int prev = (rank + world - 1) % world;
  const int reduce_steps = reduce_scatter ? world - 1 : 0;
  const int steps = reduce_steps + (all_gather ? world - 1 : 0);
  if (steps == 0) {
    if (op == ReduceKind::kMean && reduce_scatter) {
      DivideBy(data.subspan(layout.offset(rank), layout.size(rank)), static_cast<float>(world));
    }
    return {};
  }
  const int first_send_block = reduce_scatter ? rank - 1 : rank;
  auto send_block = [&](int step) { return ((first_send_block - step) % world + world) % world; };
  auto segment = [&](int block, size_t index) {
    auto [begin, end] = SegmentRange(layout.size(block), index);
    return data.subspan(layout.offset(block) + begin, end - begin);
  };
  const size_t segments = SegmentCount(layout.max_size());

  for (size_t index = 0; index < segments; ++index) {
    Status sent = call.Send(next, AsBytes(segment(send_block(0), index)));
    if (!sent) return sent;
  }
  for (int step = 0; step < steps; ++step) {
    const int recv_block = send_block(step + 1);
    for (size_t index = 0; index < segments; ++index) {
      std::span<float> target = segment(recv_block, index);
      Result<Payload> received = call.RecvFloats(prev, target.size());
      if (!received) return std::move(received).error();
      if (step < reduce_steps) {
        ReduceInto(target, received->bytes(), op);
        if (step == reduce_steps - 1 && op == ReduceKind::kMean) {
          DivideBy(target, static_cast<float>(world));
        }
      } else {
        CopyInto(target, received->bytes());
      }
      if (step + 1 < steps) {
        Status sent = call.Send(next, AsBytes(target));
        if (!sent) return sent;
      }
    }
  }
  return {};
}

// Sends `data` to `peer` in segments.
Status SendSegments(CollectiveCall& call, int peer, std::span<const float> data) {
  for (size_t index = 0; index < SegmentCount(data.size()); ++index) {
    Status sent = call.Send(peer, AsBytes(Segment(data, index)));
    if (!sent) return sent;
  }
  return {};
}

// Receives `data.size()` floats from `peer` in segments and reduces each into
// `data` with `op` (or copies it, when `op` is empty) as soon as it arrives.
Status ReceiveSegments(CollectiveCall& call, int peer, std::span<float> data, std::optional<ReduceKind> op) {
  for (size_t index = 0; index < SegmentCount(data.size()); ++index) {
    std::span<float> target = Segment(data, index);
    Result<Payload> received = call.RecvFloats(peer, target.size());
    if (!received) return std::move(received).error();
    if (op) {
      ReduceInto(target, received->bytes(), *op);
    } else {
      CopyInto(target, received->bytes());
    }
  }
  return {};
}

// Sends `data` to `peer` and reduces the peer's `data` into ours, segment by
// segment: segment i is reduced as soon as it arrives, and the send of
// segment i + kSendAheadSegments follows it, so reduction overlaps the
// transfer and each segment is copied for sending shortly before it is
// reduced (while still in cache). Queuing every segment up front instead
// measured 14% slower at 16 MiB on 2 ranks (14.1 vs 12.1 ms), 1 or 3 ahead
// in between.
Status ExchangeAndReduce(CollectiveCall& call, int peer, std::span<float> data, ReduceKind op) {
  const size_t segments = SegmentCount(data.size());
  size_t sent = 0;
  auto send_next = [&]() -> Status {
    Status queued = call.Send(peer, AsBytes(Segment(data, sent)));
    ++sent;
    return queued;
  };
  while (sent < std::min(kSendAheadSegments, segments)) {
    if (Status queued = send_next(); !queued) return queued;
  }
  for (size_t index = 0; index < segments; ++index) {
    std::span<float> target = Segment(data, index);
    Result<Payload> received = call.RecvFloats(peer, target.size());
    if (!received) return std::move(received).error();
    ReduceInto(target, received->bytes(), op);
    if (sent < segments) {
      if (Status queued = send_next(); !queued) return queued;
    }
  }
  return {};
}

// Recursive doubling, any group size: with p the largest power of two <=
// size, the first 2*(size-p) ranks pair up (even sends to odd, odd reduces),
// p ranks exchange and reduce log2(p) times, and the odd ranks return the
// result to their even partners. Latency-optimal for small buffers; for two
// ranks it moves as many bytes as the ring in one round instead of two.
Status RunRecursiveDoubling(CollectiveCall& call, std::span<float> data, ReduceKind op) {
  const int world = call.size();
  const int rank = call.rank();
  int power = 1;
  while (power * 2 <= world) power *= 2;
  const int extra = world - power;

  int virtual_rank;
  if (rank < 2 * extra) {
    if (rank % 2 == 0) {
      Status sent = SendSegments(call, rank + 1, data);
      if (!sent) return sent;
      virtual_rank = -1;
    } else {
      Status reduced = ReceiveSegments(call, rank - 1, data, op);
      if (!reduced) return reduced;
      virtual_rank = rank / 2;
    }
  } else {
    virtual_rank = rank - extra;
  }
  auto real_rank = [&](int virtual_peer) {
    return virtual_peer < extra ? virtual_peer * 2 + 1 : virtual_peer + extra;
  };

  if (virtual_rank >= 0) {
    for (int mask = 1; mask < power; mask <<= 1) {
      Status exchanged = ExchangeAndReduce(call, real_rank(virtual_rank ^ mask), data, op);
      if (!exchanged) return exchanged;
    }
    if (op == ReduceKind::kMean) DivideBy(data, static_cast<float>(world));
  }

  if (rank < 2 * extra) {
    if (rank % 2 == 1) return SendSegments(call, rank - 1, data);
    return ReceiveSegments(call, rank + 1, data, std::nullopt);
  }
  return {};
}

// Binomial tree rooted at `root`, for small buffers.
Status RunTreeBroadcast(CollectiveCall& call, int root, std::span<float> data) {
  const int world = call.size();
  const int virtual_rank = (call.rank() - root + world) % world;
  auto real_rank = [&](int v) { return (v + root) % world; };
  int mask = 1;
  while (mask < world) {
    if (virtual_rank & mask) {
      Result<Payload> received = call.RecvFloats(real_rank(virtual_rank - mask), data.size());
      if (!received) return std::move(received).error();
      CopyInto(data, received->bytes());
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (virtual_rank + mask < world) {
      Status sent = call.Send(real_rank(virtual_rank + mask), AsBytes(data));
      if (!sent) return sent;
    }
  }
  return {};
}

// A chain root -> root+1 -> ... in segments, for large buffers: each rank
// forwards a segment as soon as it has it, so the root sends the buffer once.
Status RunChainBroadcast(CollectiveCall& call, int root, std::span<float> data) {
  const int world = call.size();
  const int virtual_rank = (call.rank() - root + world) % world;
  const int prev = (call.rank() + world - 1) % world;
  const int next = (call.rank() + 1) % world;
  const bool forwards = virtual_rank + 1 < world;
  const size_t segments = SegmentCount(data.size());
  for (size_t index = 0; index < segments; ++index) {
    std::span<float> target = Segment(data, index);
    if (virtual_rank != 0) {
      Result<Payload> received = call.RecvFloats(prev, target.size());
      if (!received) return std::move(received).error();
      CopyInto(target, received->bytes());
    }
    if (forwards) {
      Status sent = call.Send(next, AsBytes(target));
      if (!sent) return sent;
    }
  }
  return {};
}

// A broadcast over messages: each receiver first sends the root an empty
// frame carrying its length; the root reads them after sending the data (so
// they arrive while it sends) and fails too, naming the receiver, when a
// length differs from its own.
Status BroadcastOverMessages(CollectiveCall& call, int root, std::span<float> data) {
  if (call.rank() != root) {
    if (Status told = call.Send(root, {}); !told) return told;
  }
  Status moved = data.size() * sizeof(float) <= kSmallCollectiveBytes ? RunTreeBroadcast(call, root, data)
                                                                      : RunChainBroadcast(call, root, data);
  if (!moved || call.rank() != root) return moved;
  for (int peer = 0; peer < call.size(); ++peer) {
    if (peer == root) continue;
    Result<Message> length = call.Recv(peer, /*check_length=*/true);
    if (!length) return std::move(length).error();
  }
  return {};
}

// Gives the group its CollectiveArea in `call`, a kSetUpArea step with the
// sequence number of the collective that needs the area (so that a mismatch
// in that collective fails it in the area, not the setup, which would leave
// some members with an area and some without): rank 0 creates the area and
// sends its address to every member; each opens it and acknowledges; once
// all have, rank 0 stops sharing it and tells every member to go on.
Status SetUpArea(CollectiveCall& call, GroupState& state) {
  std::unique_ptr<CollectiveArea> area;
  if (call.rank() == 0) {
    Result<std::unique_ptr<CollectiveArea>> created = CollectiveArea::Create(0, call.size());
    if (!created) return WithContext(std::move(created).error(), call.Describe());
    area = std::move(*created);
    const std::string address = area->address().ToString();
    for (int peer = 1; peer < call.size(); ++peer) {
      if (Status sent = call.Send(peer, std::as_bytes(std::span(address))); !sent) return sent;
    }
    for (int peer = 1; peer < call.size(); ++peer) {
      if (Result<Message> opened = call.Recv(peer, /*check_length=*/true); !opened) {
        return std::move(opened).error();
      }
    }
    area->StopSharing();
    for (int peer = 1; peer < call.size(); ++peer) {
      if (Status sent = call.Send(peer, {}); !sent) return sent;
    }
  } else {
    Result<Message> received = call.Recv(0, /*check_length=*/true);
    if (!received) {
      const ErrorKind kind = received.error().kind;
      if (kind == ErrorKind::kCollectiveMismatch || kind == ErrorKind::kLengthMismatch) {
        // Answer anyway: the answer carries this rank's op, sequence number
        // and length, so rank 0, waiting for it, fails with the mismatch too
        // instead of timing out.
        (void)call.Send(0, {});
      }
      return std::move(received).error();
    }
    const std::span<const std::byte> bytes = received->payload.bytes();
    Result<SegmentAddress> address =
        SegmentAddress::Parse(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    if (!address) return WithContext(std::move(address).error(), call.From(0));
    Result<std::unique_ptr<CollectiveArea>> opened = CollectiveArea::Open(*address, call.rank(), call.size());
    if (!opened) {
      // Rank 0 made the area for this call and keeps it open until every
      // member has acknowledged: when it is gone, rank 0 gave up on the call
      // (e.g. it lost another member), so this rank has lost it too.
      return Error{ErrorKind::kPeerLost,
                   call.From(0) + ": its collective area is gone (" + opened.error().ToString() + ")"};
    }
    area = std::move(*opened);
    if (Status sent = call.Send(0, {}); !sent) return sent;
    if (Result<Message> go = call.Recv(0, /*check_length=*/true); !go) return std::move(go).error();
  }
  Transport* transport = state.transport.get();  // outlives the area: both are the group's
  if (Status watched =
          area->WatchMembers(state.members, [transport] { return transport->CheckAbortNotices(); });
      !watched) {
    return WithContext(std::move(watched).error(), call.Describe());
  }
  state.area = std::move(area);
  return {};
}

// The group's CollectiveArea, set up (a step of `call`, on every member
// alike) when `call` is the first collective to use it since the group
// began or last dropped it; nullptr when not every member shares memory
// with this rank.
Result<CollectiveArea*> AreaFor(CollectiveCall& call, GroupState& state) {
  if (!state.area) {
    if (!state.SharesMemory()) return nullptr;
    CollectiveCall setup(state, CollectiveOp::kSetUpArea, 0, call);
    if (Status ready = setup.Run([&] { return SetUpArea(setup, state); }); !ready) {
      return WithContext(std::move(ready).error(), call.Describe());
    }
    call.Announce();
  }
  call.EnterArea();
  return state.area.get();
}

std::vector<std::byte> ToVector(const Payload& payload) {
  return std::vector<std::byte>(payload.bytes().begin(), payload.bytes().end());
}

}  // namespace

struct ProcessGroup::State : GroupState {};

ProcessGroup::ProcessGroup(std::shared_ptr<Transport> transport) : state_(std::make_shared<State>()) {
  CHECK(transport != nullptr);
  state_->members.resize(transport->world_size());
  for (int i = 0; i < transport->world_size(); ++i) state_->members[i] = i;
  state_->ahead.resize(state_->members.size());
  state_->rank = transport->rank();
  state_->transport = std::move(transport);
  state_->group_ids = std::make_shared<GroupIdAllocator>();
}

int ProcessGroup::rank() const { return state_->rank; }

int ProcessGroup::world_size() const { return state_->size(); }

const std::shared_ptr<Transport>& ProcessGroup::transport() const { return state_->transport; }

Status ProcessGroup::barrier() {
  CollectiveCall call(*state_, CollectiveOp::kBarrier, 0);
  return call.Run([&]() -> Status {
    Result<CollectiveArea*> area = AreaFor(call, *state_);
    if (!area) return std::move(area).error();
    if (*area) {
      return (*area)->Barrier(call.stamp(), state_->NextDeadline(), [&call] { return call.Describe(); });
    }
    const int world = call.size();
    for (int distance = 1; distance < world; distance <<= 1) {
      Status sent = call.Send((call.rank() + distance) % world, {});
      if (!sent) return sent;
      Result<Message> received = call.Recv((call.rank() - distance + world) % world, false);
      if (!received) return std::move(received).error();
    }
    return {};
  });
}

namespace {

// "send to rank 2 tag 0x00000007": built only when a call fails.
std::string PointToPointWhere(const char* direction, int peer, uint32_t tag) {
  return std::string(direction) + " rank " + std::to_string(peer) + " tag " + HexTag(tag);
}

// Checks a point-to-point call's peer and tag.
Status CheckPointToPoint(const char* direction, int peer, int world, uint32_t tag) {
  if (tag >= kTagReservedBase) {
    return Error::InvalidTag(PointToPointWhere(direction, peer, tag), tag);
  }
  if (peer < 0 || peer >= world) {
    return Error::UnknownRank(PointToPointWhere(direction, peer, tag), peer, world);
  }
  return {};
}

// Copies a received payload into `T`s; its size must be a multiple of sizeof(T).
template <typename T>
Result<std::vector<T>> PayloadAs(Result<Payload> payload, const char* type_name, int from, uint32_t tag) {
  if (!payload) return std::move(payload).error();
  if (payload->size() % sizeof(T) != 0) {
    return Error::InvalidArgument(PointToPointWhere("recv from", from, tag) + ": " +
                                  std::to_string(payload->size()) + " bytes is not a whole number of " +
                                  type_name);
  }
  std::vector<T> values(payload->size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), payload->bytes().data(), payload->size());
  return values;
}

}  // namespace

Status ProcessGroup::send_bytes(int to, uint32_t tag, std::span<const std::byte> data) {
  return send_bytes(to, tag, data, {});
}

Status ProcessGroup::send_bytes(int to, uint32_t tag, std::span<const std::byte> head,
                                std::span<const std::byte> tail) {
  Status valid = CheckPointToPoint("send to", to, world_size(), tag);
  if (!valid) return valid;
  const FrameKey key{tag, CollectiveOp::kPointToPoint, 0, head.size() + tail.size()};
  Status sent = state_->transport->Send(state_->members[to], key, head, tail, state_->NextDeadline());
  if (!sent) return WithContext(std::move(sent).error(), PointToPointWhere("send to", to, tag));
  return {};
}

Result<Payload> ProcessGroup::recv_payload(int from, uint32_t tag) {
  Status valid = CheckPointToPoint("recv from", from, world_size(), tag);
  if (!valid) return std::move(valid).error();
  Result<Message> received = state_->transport->Recv(state_->members[from], tag, state_->NextDeadline());
  if (!received) {
    return WithContext(std::move(received).error(), PointToPointWhere("recv from", from, tag));
  }
  return std::move(received->payload);
}

Result<std::vector<std::byte>> ProcessGroup::recv_bytes(int from, uint32_t tag) {
  Result<Payload> payload = recv_payload(from, tag);
  if (!payload) return std::move(payload).error();
  return ToVector(*payload);
}

Status ProcessGroup::send_f32(int to, uint32_t tag, std::span<const float> data) {
  return send_bytes(to, tag, std::as_bytes(data));
}

Status ProcessGroup::send_i32(int to, uint32_t tag, std::span<const int32_t> data) {
  return send_bytes(to, tag, std::as_bytes(data));
}

Result<std::vector<float>> ProcessGroup::recv_f32(int from, uint32_t tag) {
  return PayloadAs<float>(recv_payload(from, tag), "float32", from, tag);
}

Result<std::vector<int32_t>> ProcessGroup::recv_i32(int from, uint32_t tag) {
  return PayloadAs<int32_t>(recv_payload(from, tag), "int32", from, tag);
}

Status ProcessGroup::all_reduce(std::span<float> data, ReduceKind op) {
  CollectiveCall call(*state_, CollectiveOp::kAllReduce, data.size());
  return call.Run([&]() -> Status {
    Result<CollectiveArea*> area = AreaFor(call, *state_);
    if (!area) return std::move(area).error();
    if (*area) {
      return (*area)->AllReduce(data, op, call.stamp(), state_->NextDeadline(),
                                [&call] { return call.Describe(); });
    }
    if (data.size() * sizeof(float) <= kSmallCollectiveBytes ||
        data.size() < static_cast<size_t>(call.size()) || call.size() == 2) {
      return RunRecursiveDoubling(call, data, op);
    }
    const BlockLayout layout{data.size(), static_cast<size_t>(call.size())};
    return RunRing(call, data, layout, /*reduce_scatter=*/true, /*all_gather=*/true, op);
  });
}

Status ProcessGroup::all_gather(std::span<const float> data, std::span<float> out) {
  CollectiveCall call(*state_, CollectiveOp::kAllGather, data.size());
  return call.Run([&]() -> Status {
    const size_t world = static_cast<size_t>(call.size());
    if (out.size() != world * data.size()) {
      return Error::InvalidArgument(call.Describe() + ": output of " + std::to_string(out.size()) +
                                    " elements for " + std::to_string(world) + " blocks of " +
                                    std::to_string(data.size()));
    }
    Result<CollectiveArea*> area = AreaFor(call, *state_);
    if (!area) return std::move(area).error();
    if (*area) {
      return (*area)->AllGather(data, out, call.stamp(), state_->NextDeadline(),
                                [&call] { return call.Describe(); });
    }
    std::copy(data.begin(), data.end(), out.begin() + call.rank() * data.size());
    return RunRing(call, out, BlockLayout{out.size(), world}, /*reduce_scatter=*/false, /*all_gather=*/true,
                   ReduceKind::kSum);
  });
}

Result<std::vector<float>> ProcessGroup::all_gather(std::span<const float> data) {
  std::vector<float> gathered(static_cast<size_t>(world_size()) * data.size());
  Status status = all_gather(data, gathered);
  if (!status) return std::move(status).error();
  return gathered;
}

Status ProcessGroup::broadcast(int root, std::span<float> data) {
  if (root < 0 || root >= world_size()) {
    return Error::UnknownRank("broadcast root", root, world_size());
  }
  CollectiveCall call(*state_, CollectiveOp::kBroadcast, data.size());
  return call.Run([&]() -> Status {
    Result<CollectiveArea*> area = AreaFor(call, *state_);
    if (!area) return std::move(area).error();
    if (*area) {
      AreaStamp stamp = call.stamp();
      stamp.root = root;
      return (*area)->Broadcast(data, stamp, state_->NextDeadline(), [&call] { return call.Describe(); });
    }
    return BroadcastOverMessages(call, root, data);
  });
}

Result<std::vector<float>> ProcessGroup::reduce_scatter(std::span<const float> data, ReduceKind op) {
  CollectiveCall call(*state_, CollectiveOp::kReduceScatter, data.size());
  return call.Run([&]() -> Result<std::vector<float>> {
    const size_t world = static_cast<size_t>(call.size());
    if (data.size() % world != 0) {
      return Error::InvalidArgument(call.Describe() + ": length " + std::to_string(data.size()) +
                                    " is not divisible by the group size " + std::to_string(world));
    }
    Result<CollectiveArea*> area = AreaFor(call, *state_);
    if (!area) return std::move(area).error();
    if (*area) {
      std::vector<float> mine(data.size() / world);
      Status reduced = (*area)->ReduceScatter(data, mine, op, call.stamp(), state_->NextDeadline(),
                                              [&call] { return call.Describe(); });
      if (!reduced) return std::move(reduced).error();
      return mine;
    }
    std::vector<float> work(data.begin(), data.end());
    const BlockLayout layout{work.size(), world};
    Status ring = RunRing(call, work, layout, /*reduce_scatter=*/true, /*all_gather=*/false, op);
    if (!ring) return std::move(ring).error();
    const auto block = work.begin() + layout.offset(call.rank());
    return std::vector<float>(block, block + layout.size(call.rank()));
  });
}

Result<std::vector<std::vector<std::byte>>> ProcessGroup::gather(int root, std::span<const std::byte> data) {
  if (root < 0 || root >= world_size()) {
    return Error::UnknownRank("gather root", root, world_size());
  }
  CollectiveCall call(*state_, CollectiveOp::kGather, 0);
  return call.Run([&]() -> Result<std::vector<std::vector<std::byte>>> {
    std::vector<std::vector<std::byte>> blobs;
    if (call.rank() != root) {
      Status sent = call.Send(root, data);
      if (!sent) return std::move(sent).error();
      return blobs;
    }
    blobs.resize(call.size());
    for (int peer = 0; peer < call.size(); ++peer) {
      if (peer == root) {
        blobs[peer].assign(data.begin(), data.end());
        continue;
      }
      Result<Message> received = call.Recv(peer, /*check_length=*/false);
      if (!received) return std::move(received).error();
      blobs[peer] = ToVector(received->payload);
    }
    return blobs;
  });
}

Result<std::vector<std::byte>> ProcessGroup::scatter(int root,
                                                     const std::vector<std::vector<std::byte>>& blobs) {
  if (root < 0 || root >= world_size()) {
    return Error::UnknownRank("scatter root", root, world_size());
  }
  CollectiveCall call(*state_, CollectiveOp::kScatter, 0);
  return call.Run([&]() -> Result<std::vector<std::byte>> {
    if (call.rank() != root) {
      Result<Message> received = call.Recv(root, /*check_length=*/false);
      if (!received) return std::move(received).error();
      return ToVector(received->payload);
    }
    if (blobs.size() != static_cast<size_t>(call.size())) {
      return Error::InvalidArgument(call.Describe() + ": root passed " + std::to_string(blobs.size()) +
                                    " blobs, expected " + std::to_string(call.size()));
    }
    for (int peer = 0; peer < call.size(); ++peer) {
      if (peer == root) continue;
      Status sent = call.Send(peer, blobs[peer]);
      if (!sent) return std::move(sent).error();
    }
    return blobs[root];
  });
}

Result<ProcessGroup> ProcessGroup::Split(std::span<const int> ranks) {
  const int world = world_size();
  std::vector<bool> listed(world, false);
  for (int member : ranks) {
    if (member < 0 || member >= world) return Error::UnknownRank("split", member, world);
    if (listed[member]) {
      return Error::InvalidArgument("split: rank " + std::to_string(member) + " is listed twice");
    }
    listed[member] = true;
  }
  // Agree on a group id above every id any rank has handed out, and check that
  // every rank passed the same list (by a 24-bit hash, exact in a float).
  uint32_t list_hash = 2166136261u;
  for (int member : ranks) list_hash = (list_hash ^ static_cast<uint32_t>(member)) * 16777619u;
  list_hash &= 0xFFFFFF;
  uint32_t proposal;
  {
    std::lock_guard<std::mutex> lock(state_->group_ids->mutex);
    proposal = state_->group_ids->next;
  }
  const float mine[2] = {static_cast<float>(proposal), static_cast<float>(list_hash)};
  CollectiveCall call(*state_, CollectiveOp::kSplit, 2);
  std::vector<float> all(2 * static_cast<size_t>(world));
  std::copy(mine, mine + 2, all.begin() + 2 * rank());
  Status ring = call.Run([&] {
    return RunRing(call, all, BlockLayout{all.size(), static_cast<size_t>(world)},
                   /*reduce_scatter=*/false, /*all_gather=*/true, ReduceKind::kMax);
  });
  if (!ring) return std::move(ring).error();
  uint32_t group_id = 0;
  for (int peer = 0; peer < world; ++peer) {
    if (all[2 * peer + 1] != static_cast<float>(list_hash)) {
      return Error::InvalidArgument(call.Describe() + ": rank " + std::to_string(peer) +
                                    " passed a different rank list");
    }
    group_id = std::max(group_id, static_cast<uint32_t>(all[2 * peer]));
  }
  if (group_id > kMaxGroupId) {
    return Error::InvalidArgument(call.Describe() + ": out of group ids");
  }
  {
    std::lock_guard<std::mutex> lock(state_->group_ids->mutex);
    state_->group_ids->next = std::max(state_->group_ids->next, group_id + 1);
  }
  auto position = std::find(ranks.begin(), ranks.end(), rank());
  if (position == ranks.end()) {
    return Error::InvalidArgument(call.Describe() + ": rank " + std::to_string(rank()) +
                                  " is not in the split list");
  }
  ProcessGroup child(state_->transport);
  child.state_->members.clear();
  for (int member : ranks) child.state_->members.push_back(state_->members[member]);
  child.state_->ahead.resize(child.state_->members.size());
  child.state_->rank = static_cast<int>(position - ranks.begin());
  child.state_->group_id = group_id;
  child.state_->group_ids = state_->group_ids;
  return child;
}

}  // namespace inferno
