#include "distributed/collectives/barrier.h"

#include <utility>

#include "distributed/collectives/group_area.h"

namespace inferno {
namespace {

constexpr CollectiveSpec kBarrierSpec{CollectiveOp::kBarrier, /*runs_in_area=*/true};

}  // namespace

Status Barrier(GroupState& group) {
  CollectiveCall call(group, kBarrierSpec, 0);
  return call.Run([&]() -> Status {
    Result<CollectiveArea*> area = AreaFor(call, group);
    if (!area) return std::move(area).error();
    if (*area)
      return BarrierInArea(**area, call.stamp(), group.NextDeadline(), [&call] { return call.Describe(); });
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

Status BarrierInArea(CollectiveArea& area, const AreaStamp& stamp, Deadline deadline,
                     const std::function<std::string()>& describe) {
  return area.RunChunks(
      /*chunks=*/1, stamp, deadline, describe, [](size_t, std::span<std::byte>) {}, /*reduce_slice=*/nullptr,
      [](size_t, int) {});
}

}  // namespace inferno
