// all_gather: every rank gets every rank's buffer, concatenated in rank
// order. Before: rank i's `data` holds x_i (n elements, n equal on every
// rank). After: every rank's `out` (W × n elements) holds x_0 x_1 ...
// x_{W-1}: rank i's at [i × n, (i + 1) × n).
//
// Algorithms: in the group's shared-memory area when every member shares
// memory (group_area.h), else the all-gather half of the pipelined ring
// (pipelined_ring.h). Only bytes move, so every element type takes the same
// path; the element count on the wire is in elements of the caller's type.
//
// Thread-safety: as every collective of a group (GroupState).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "base/error.h"
#include "distributed/collectives/collective_call.h"
#include "distributed/shm/collective_area.h"

namespace inferno {

// The collective over the group's ranks. `out` must hold W × data.size()
// elements, else InvalidArgument (and the other ranks hear of it). The
// element type is not on the wire: every rank must pass the same type.
// Errors: LengthMismatch (a rank's length differs), CollectiveMismatch,
// PeerLost, Timeout.
Status AllGather(GroupState& group, std::span<const float> data, std::span<float> out);
Status AllGather(GroupState& group, std::span<const int32_t> data, std::span<int32_t> out);
Status AllGather(GroupState& group, std::span<const std::byte> data, std::span<std::byte> out);

// The all-gather ring inside `call` (not a collective of its own): `out`
// (call.size() equal blocks) holds this rank's block at block call.rank() on
// entry, and every rank's on return. Errors: the call's.
Status RingAllGather(CollectiveCall& call, std::span<std::byte> out);

// The shared-memory variant, one member's part of it: `out` (size ×
// data.size() bytes) receives every member's `data` in member order.
// `stamp.element_count` is the caller's element count. Errors as
// CollectiveArea::RunChunks.
Status AllGatherInArea(CollectiveArea& area, std::span<const std::byte> data, std::span<std::byte> out,
                       const AreaStamp& stamp, Deadline deadline,
                       const std::function<std::string()>& describe);

}  // namespace inferno
