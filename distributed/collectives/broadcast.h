// broadcast: every rank gets the root's buffer. Before: the root's `data`
// holds x (n elements); every other rank's `data` is n elements of anything.
// After: every rank's `data` holds x. n must be equal on every rank.
//
// Algorithms: in the group's shared-memory area when every member shares
// memory (group_area.h); else each receiver first sends the root an empty
// frame carrying its length, then a binomial tree (at most
// kSmallCollectiveBytes) or a chain pipelined in segments moves the data.
// Only bytes move, so every element type takes the same path; the element
// count on the wire is in elements of the caller's type.
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

// The collective over the group's ranks, from group rank `root`. Errors:
// UnknownRank (root outside the group; no collective is started),
// LengthMismatch (a rank's length differs from the root's: on that rank and
// on the root), CollectiveMismatch (a rank runs another collective or names
// another root), PeerLost, Timeout. The element type is not on the wire:
// every rank must pass the same type.
Status Broadcast(GroupState& group, int root, std::span<float> data);
Status Broadcast(GroupState& group, int root, std::span<int32_t> data);
Status Broadcast(GroupState& group, int root, std::span<std::byte> data);

// The shared-memory variant, one member's part of it: on every member but
// `stamp.root`, `data` is overwritten with the root's. Every member, the
// root included, checks every other member's length and root:
// LengthMismatch, or CollectiveMismatch naming the other root, on every
// member. `stamp.element_count` is the caller's element count. Errors
// otherwise as CollectiveArea::RunChunks.
Status BroadcastInArea(CollectiveArea& area, std::span<std::byte> data, const AreaStamp& stamp,
                       Deadline deadline, const std::function<std::string()>& describe);

}  // namespace inferno
