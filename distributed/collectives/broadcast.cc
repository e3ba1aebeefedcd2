#include "distributed/collectives/broadcast.h"

#include <utility>

#include <glog/logging.h>

#include "distributed/collectives/group_area.h"
#include "distributed/collectives/segments.h"

namespace inferno {
namespace {

constexpr CollectiveSpec kBroadcastSpec{CollectiveOp::kBroadcast, /*runs_in_area=*/true};

// Binomial tree rooted at `root`, for small buffers.
Status RunTreeBroadcast(CollectiveCall& call, int root, std::span<std::byte> data) {
  const int world = call.size();
  const int virtual_rank = (call.rank() - root + world) % world;
  auto real_rank = [&](int v) { return (v + root) % world; };
  int mask = 1;
  while (mask < world) {
    if (virtual_rank & mask) {
      Result<Payload> received = call.RecvExactly(real_rank(virtual_rank - mask), data.size());
      if (!received) return std::move(received).error();
      CopyInto(data, received->bytes());
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (virtual_rank + mask < world) {
      Status sent = call.Send(real_rank(virtual_rank + mask), data);
      if (!sent) return sent;
    }
  }
  return {};
}

// A chain root -> root+1 -> ... in segments, for large buffers: each rank
// forwards a segment as soon as it has it, so the root sends the buffer once.
Status RunChainBroadcast(CollectiveCall& call, int root, std::span<std::byte> data) {
  const int world = call.size();
  const int virtual_rank = (call.rank() - root + world) % world;
  const int prev = (call.rank() + world - 1) % world;
  const int next = (call.rank() + 1) % world;
  const bool forwards = virtual_rank + 1 < world;
  const size_t segments = SegmentCount<std::byte>(data.size());
  for (size_t index = 0; index < segments; ++index) {
    std::span<std::byte> target = Segment(data, index);
    if (virtual_rank != 0) {
      Result<Payload> received = call.RecvExactly(prev, target.size());
      if (!received) return std::move(received).error();
      CopyInto(target, received->bytes());
    }
    if (forwards) {
      Status sent = call.Send(next, target);
      if (!sent) return sent;
    }
  }
  return {};
}

// A broadcast over messages: each receiver first sends the root an empty
// frame carrying its length; the root reads them after sending the data (so
// they arrive while it sends) and fails too, naming the receiver, when a
// length differs from its own.
Status BroadcastOverMessages(CollectiveCall& call, int root, std::span<std::byte> data) {
  if (call.rank() != root) {
    if (Status told = call.Send(root, {}); !told) return told;
  }
  Status moved = data.size() <= kSmallCollectiveBytes ? RunTreeBroadcast(call, root, data)
                                                      : RunChainBroadcast(call, root, data);
  if (!moved || call.rank() != root) return moved;
  for (int peer = 0; peer < call.size(); ++peer) {
    if (peer == root) continue;
    Result<Message> length = call.Recv(peer, /*check_length=*/true);
    if (!length) return std::move(length).error();
  }
  return {};
}

// The collective on the bytes of `data`, elements of `element_size` bytes.
Status BroadcastBytes(GroupState& group, int root, std::span<std::byte> data, size_t element_size) {
  if (root < 0 || root >= group.size()) {
    return Error::UnknownRank("broadcast root", root, group.size());
  }
  CollectiveCall call(group, kBroadcastSpec, data.size() / element_size);
  return call.Run([&]() -> Status {
    Result<CollectiveArea*> area = AreaFor(call, group);
    if (!area) return std::move(area).error();
    if (*area) {
      AreaStamp stamp = call.stamp();
      stamp.root = root;
      return BroadcastInArea(**area, data, stamp, group.NextDeadline(), [&call] { return call.Describe(); });
    }
    return BroadcastOverMessages(call, root, data);
  });
}

}  // namespace

Status Broadcast(GroupState& group, int root, std::span<float> data) {
  return BroadcastBytes(group, root, std::as_writable_bytes(data), sizeof(float));
}

Status Broadcast(GroupState& group, int root, std::span<int32_t> data) {
  return BroadcastBytes(group, root, std::as_writable_bytes(data), sizeof(int32_t));
}

Status Broadcast(GroupState& group, int root, std::span<std::byte> data) {
  return BroadcastBytes(group, root, data, 1);
}

Status BroadcastInArea(CollectiveArea& area, std::span<std::byte> data, const AreaStamp& stamp,
                       Deadline deadline, const std::function<std::string()>& describe) {
  CHECK(stamp.root >= 0 && stamp.root < area.size()) << stamp.root;
  const bool root = stamp.root == area.rank();
  return area.RunChunks(
      AreaChunkCount(data.size(), kAreaSlotBytes), stamp, deadline, describe,
      CollectiveArea::WriteChunksOf(root ? std::span<const std::byte>(data) : std::span<const std::byte>()),
      /*reduce_slice=*/nullptr, [&](size_t index, int buffer) {
        if (root) return;
        const std::span<std::byte> chunk = AreaChunkOf(data, index, kAreaSlotBytes);
        CopyBytes(chunk.data(), area.Slot(stamp.root, buffer).data(), chunk.size());
      });
}

}  // namespace inferno
