// The group's shared-memory CollectiveArea, set up by the first collective
// that needs it: on a group of two or more ranks that all share memory with
// each other (Transport::SharesMemoryWith), the collectives whose
// CollectiveSpec says runs_in_area run in a segment of the group's own
// (distributed/shm/collective_area.h) instead of in messages.
//
// Thread-safety: as the collectives of the group (one at a time).
#pragma once

#include "base/error.h"
#include "distributed/collectives/collective_call.h"
#include "distributed/shm/collective_area.h"

namespace inferno {

// The group's CollectiveArea, set up (a kSetUpArea step with the sequence
// number of `call`, on every member alike) when `call` is the first
// collective to use it since the group began or last dropped it; nullptr
// when not every member shares memory with this rank. A non-null area marks
// `call` as running in it. The setup: rank 0 creates the area and sends its
// address to every member; each opens it and acknowledges; once all have,
// rank 0 stops sharing it and tells every member to go on. Errors: the
// setup's (Io, PeerLost, Timeout, CollectiveMismatch, LengthMismatch),
// prefixed with `call`'s description.
Result<CollectiveArea*> AreaFor(CollectiveCall& call, GroupState& state);

}  // namespace inferno
