// all_reduce: in place, every rank's buffer becomes op(every rank's buffer),
// element-wise. Before: rank i's `data` holds its input x_i (n elements, n
// equal on every rank). After: every rank's `data` holds x_0 op x_1 op ...
// op x_{W-1} (for kMean, that sum divided by W).
//
// Algorithms: in the group's shared-memory area when every member shares
// memory (group_area.h), reduced in rank order, so every rank gets the same
// bits; else recursive doubling for buffers of at most kSmallCollectiveBytes
// and on two ranks, a pipelined ring (pipelined_ring.h) otherwise. Each
// algorithm reduces in one fixed order for a given world size and length, so
// repeated calls give the same bits.
//
// Thread-safety: as every collective of a group (GroupState).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "base/error.h"
#include "distributed/collectives/collective_call.h"
#include "distributed/reduce.h"
#include "distributed/shm/collective_area.h"

namespace inferno {

// all_reduce chunks in the area of at least this many elements are reduced
// a slice per member (see AllReduceInArea); smaller ones whole by every member.
inline constexpr size_t kSliceReduceElements = 16384;

// The collective over the group's ranks. int32 sums and products wrap
// modulo 2^32, and kMean of int32 rounds toward zero. The element type is not
// on the wire: every rank must pass the same type. Errors: LengthMismatch (a
// rank's length differs, on every rank), CollectiveMismatch (a rank runs
// another collective), PeerLost, Timeout.
Status AllReduce(GroupState& group, std::span<float> data, ReduceKind op);
Status AllReduce(GroupState& group, std::span<int32_t> data, ReduceKind op);

// The shared-memory variant, one member's part of it: each member writes
// its chunk into its slot; a chunk of at least kSliceReduceElements is
// reduced a slice per member (member r reduces slice r of every slot, in
// member order, into its own slot, then every member copies each slice
// from the member that reduced it: each member reads the chunk about twice
// instead of once per member); a smaller chunk is reduced whole by every
// member. `stamp.element_count` is data.size(). Errors as
// CollectiveArea::RunChunks.
Status AllReduceInArea(CollectiveArea& area, std::span<float> data, ReduceKind op, const AreaStamp& stamp,
                       Deadline deadline, const std::function<std::string()>& describe);
Status AllReduceInArea(CollectiveArea& area, std::span<int32_t> data, ReduceKind op, const AreaStamp& stamp,
                       Deadline deadline, const std::function<std::string()>& describe);

}  // namespace inferno
