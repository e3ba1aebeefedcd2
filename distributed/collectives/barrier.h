// barrier: returns on each rank once every rank of the group has entered it.
//
// Algorithms: in the group's shared-memory area when every member shares
// memory (group_area.h: one chunk that every member posts and nobody
// writes), else dissemination over messages (ceil(log2 W) rounds).
//
// Thread-safety: as every collective of a group (GroupState).
#pragma once

#include <functional>
#include <string>

#include "base/error.h"
#include "distributed/collectives/collective_call.h"
#include "distributed/shm/collective_area.h"

namespace inferno {

// Errors: CollectiveMismatch (a rank runs another collective), PeerLost,
// Timeout.
Status Barrier(GroupState& group);

// The shared-memory variant, one member's part of it (a collective of no
// elements). Errors as CollectiveArea::RunChunks.
Status BarrierInArea(CollectiveArea& area, const AreaStamp& stamp, Deadline deadline,
                     const std::function<std::string()>& describe);

}  // namespace inferno
