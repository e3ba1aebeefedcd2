#include "distributed/collectives/reduce_scatter.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

#include "distributed/collectives/group_area.h"
#include "distributed/collectives/pipelined_ring.h"

namespace inferno {
namespace {

constexpr CollectiveSpec kReduceScatterSpec{CollectiveOp::kReduceScatter, /*runs_in_area=*/true};

}  // namespace

Result<std::vector<float>> ReduceScatter(GroupState& group, std::span<const float> data, ReduceKind op) {
  CollectiveCall call(group, kReduceScatterSpec, data.size());
  return call.Run([&]() -> Result<std::vector<float>> {
    const size_t world = static_cast<size_t>(call.size());
    if (data.size() % world != 0) {
      return Error::InvalidArgument(call.Describe() + ": length " + std::to_string(data.size()) +
                                    " is not divisible by the group size " + std::to_string(world));
    }
    Result<CollectiveArea*> area = AreaFor(call, group);
    if (!area) return std::move(area).error();
    if (*area) {
      std::vector<float> mine(data.size() / world);
      Status reduced = ReduceScatterInArea(**area, data, mine, op, call.stamp(), group.NextDeadline(),
                                           [&call] { return call.Describe(); });
      if (!reduced) return std::move(reduced).error();
      return mine;
    }
    std::vector<float> work(data.begin(), data.end());
    const BlockLayout layout{work.size(), world};
    Status ring = RunRing<float>(call, work, layout, {.reduce_scatter = true, .all_gather = false}, op);
    if (!ring) return std::move(ring).error();
    const auto block = work.begin() + layout.offset(call.rank());
    return std::vector<float>(block, block + layout.size(call.rank()));
  });
}

Status ReduceScatterInArea(CollectiveArea& area, std::span<const float> data, std::span<float> out,
                           ReduceKind op, const AreaStamp& stamp, Deadline deadline,
                           const std::function<std::string()>& describe) {
  constexpr size_t kSlotElements = kAreaSlotBytes / sizeof(float);
  const size_t members = static_cast<size_t>(area.size());
  CHECK_EQ(data.size() % members, 0u);
  const size_t block = data.size() / members;
  CHECK_EQ(out.size(), block);
  // Chunk c holds elements [c × per_block, (c + 1) × per_block) of every
  // block, block b's at slot offset b × per_block, so member r reads its
  // block's part of every member's chunk side by side.
  const size_t per_block = std::max<size_t>(1, kSlotElements / members);
  return area.RunChunks(
      AreaChunkCount(block, per_block), stamp, deadline, describe,
      [&](size_t index, std::span<std::byte> slot) {
        for (size_t b = 0; b < members; ++b) {
          const std::span<const float> part = AreaChunkOf(data.subspan(b * block, block), index, per_block);
          CopyBytes(slot.data() + b * per_block * sizeof(float), part.data(), part.size_bytes());
        }
      },
      /*reduce_slice=*/nullptr,
      [&](size_t index, int buffer) {
        const std::span<float> part = AreaChunkOf(out, index, per_block);
        if (part.empty()) return;
        const size_t offset = static_cast<size_t>(area.rank()) * per_block * sizeof(float);
        CopyBytes(part.data(), area.Slot(0, buffer).data() + offset, part.size_bytes());
        for (size_t member = 1; member < members; ++member) {
          ReduceInto(part, area.Slot(static_cast<int>(member), buffer).subspan(offset, part.size_bytes()),
                     op);
        }
        if (op == ReduceKind::kMean) DivideBy(part, static_cast<float>(members));
      });
}

}  // namespace inferno
