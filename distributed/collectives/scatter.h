// scatter: each rank gets its blob from the root. Before: the root's
// `blobs` holds W blobs (sizes may differ); other ranks' `blobs` are
// ignored. After: rank i's result holds blobs[i]. Over messages only (the
// root sends each rank its blob), whatever the transport.
//
// Thread-safety: as every collective of a group (GroupState).
#pragma once

#include <cstddef>
#include <vector>

#include "base/error.h"
#include "distributed/collectives/collective_call.h"

namespace inferno {

// Errors: UnknownRank (root outside the group; no collective is started),
// InvalidArgument on the root when it has not W blobs (every other rank then
// fails at once with a CollectiveMismatch quoting it), CollectiveMismatch,
// PeerLost, Timeout.
Result<std::vector<std::byte>> Scatter(GroupState& group, int root,
                                       const std::vector<std::vector<std::byte>>& blobs);

}  // namespace inferno
