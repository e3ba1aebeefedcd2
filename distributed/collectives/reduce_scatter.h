// reduce_scatter: each rank gets one block of the element-wise reduction.
// Before: rank i's `data` holds x_i (W × n elements, equal on every rank),
// block b = [b × n, (b + 1) × n). After: rank i's result (n elements) holds
// block i of x_0 op x_1 op ... op x_{W-1} (kMean: that sum divided by W).
//
// Algorithms: in the group's shared-memory area when every member shares
// memory (group_area.h), reduced in rank order; else the reduce-scatter
// half of the pipelined ring (pipelined_ring.h).
//
// Thread-safety: as every collective of a group (GroupState).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/collectives/collective_call.h"
#include "distributed/reduce.h"
#include "distributed/shm/collective_area.h"

namespace inferno {

// The collective over the group's ranks. Errors: InvalidArgument (length
// not divisible by the group size), LengthMismatch, CollectiveMismatch,
// PeerLost, Timeout.
Result<std::vector<float>> ReduceScatter(GroupState& group, std::span<const float> data, ReduceKind op);

// The shared-memory variant, one member's part of it: `out` (n elements)
// receives op(every member's block `area.rank()`), reduced in member order.
// `stamp.element_count` is data.size(), a multiple of the group size.
// Errors as CollectiveArea::RunChunks.
Status ReduceScatterInArea(CollectiveArea& area, std::span<const float> data, std::span<float> out,
                           ReduceKind op, const AreaStamp& stamp, Deadline deadline,
                           const std::function<std::string()>& describe);

}  // namespace inferno
