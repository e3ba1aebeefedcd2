// gather: the root gets every rank's blob. Before: rank i's `data` holds
// blob b_i (sizes may differ across ranks). After: the root's result holds
// b_0, ..., b_{W-1} in rank order; every other rank's result is empty.
// Over messages only (each rank sends its blob to the root), whatever the
// transport.
//
// Thread-safety: as every collective of a group (GroupState).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "base/error.h"
#include "distributed/collectives/collective_call.h"

namespace inferno {

// Errors: UnknownRank (root outside the group; no collective is started),
// CollectiveMismatch, PeerLost, Timeout.
Result<std::vector<std::vector<std::byte>>> Gather(GroupState& group, int root,
                                                   std::span<const std::byte> data);

}  // namespace inferno
