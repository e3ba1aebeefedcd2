#include "distributed/collectives/all_gather.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

#include "distributed/collectives/group_area.h"
#include "distributed/collectives/pipelined_ring.h"

namespace inferno {
namespace {

constexpr CollectiveSpec kAllGatherSpec{CollectiveOp::kAllGather, /*runs_in_area=*/true};

// The collective on the bytes of `data` and `out`, elements of
// `element_size` bytes.
Status AllGatherBytes(GroupState& group, std::span<const std::byte> data, std::span<std::byte> out,
                      size_t element_size) {
  const size_t elements = data.size() / element_size;
  CollectiveCall call(group, kAllGatherSpec, elements);
  return call.Run([&]() -> Status {
    const size_t world = static_cast<size_t>(call.size());
    if (out.size() != world * data.size()) {
      return Error::InvalidArgument(call.Describe() + ": output of " +
                                    std::to_string(out.size() / element_size) + " elements for " +
                                    std::to_string(world) + " blocks of " + std::to_string(elements));
    }
    Result<CollectiveArea*> area = AreaFor(call, group);
    if (!area) return std::move(area).error();
    if (*area) {
      return AllGatherInArea(**area, data, out, call.stamp(), group.NextDeadline(),
                             [&call] { return call.Describe(); });
    }
    std::copy(data.begin(), data.end(), out.begin() + call.rank() * data.size());
    return RingAllGather(call, out);
  });
}

}  // namespace

Status RingAllGather(CollectiveCall& call, std::span<std::byte> out) {
  return RunRing(call, out, BlockLayout{out.size(), static_cast<size_t>(call.size())},
                 {.reduce_scatter = false, .all_gather = true}, ReduceKind::kSum);
}

Status AllGather(GroupState& group, std::span<const float> data, std::span<float> out) {
  return AllGatherBytes(group, std::as_bytes(data), std::as_writable_bytes(out), sizeof(float));
}

Status AllGather(GroupState& group, std::span<const int32_t> data, std::span<int32_t> out) {
  return AllGatherBytes(group, std::as_bytes(data), std::as_writable_bytes(out), sizeof(int32_t));
}

Status AllGather(GroupState& group, std::span<const std::byte> data, std::span<std::byte> out) {
  return AllGatherBytes(group, data, out, 1);
}

Status AllGatherInArea(CollectiveArea& area, std::span<const std::byte> data, std::span<std::byte> out,
                       const AreaStamp& stamp, Deadline deadline,
                       const std::function<std::string()>& describe) {
  CHECK_EQ(out.size(), data.size() * area.size());
  return area.RunChunks(AreaChunkCount(data.size(), kAreaSlotBytes), stamp, deadline, describe,
                        CollectiveArea::WriteChunksOf(data),
                        /*reduce_slice=*/nullptr, [&](size_t index, int buffer) {
                          for (int member = 0; member < area.size(); ++member) {
                            const std::span<std::byte> block = out.subspan(member * data.size(), data.size());
                            const std::span<std::byte> chunk = AreaChunkOf(block, index, kAreaSlotBytes);
                            CopyBytes(chunk.data(), area.Slot(member, buffer).data(), chunk.size());
                          }
                        });
}

}  // namespace inferno
