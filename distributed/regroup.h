// Regroup: after a rank of a job is lost, the survivors agree on the members
// of the job's next generation, before they rendezvous again as a new
// ProcessGroup (Join) over those members.
//
// The leader (rank 0, which survives by assumption) decides: it listens at
// the job's MASTER_ADDR:MASTER_PORT again, with the job's secret (CURVE, as
// the rendezvous), and every surviving rank reports its rank in the ended
// generation. The leader closes the membership as soon as all but one of
// the other ranks have arrived (one loss, the common case, costs no waiting)
// or when `window` has passed, then numbers the members in the order of
// their old ranks (itself 0) and answers each with its new rank and the new
// world size. A request of another generation, an unknown rank or a rank
// that arrives twice is refused with a one-line reason. The new
// generation's Join then binds fresh sockets and fresh shared-memory
// segments under a fresh job id, so no message of the ended generation can
// reach it.
//
// Thread-safety: a plain function; each call builds its own sockets.
#pragma once

#include <chrono>
#include <vector>

#include "base/error.h"
#include "distributed/rendezvous.h"

namespace inferno {

struct Regrouped {
  // The old configuration with this rank's new rank and the new world size.
  RendezvousConfig config;
  // The members' ranks in the ended generation, by new rank.
  std::vector<int> old_ranks;
};

// Regroups rank `ended.rank` of the generation `ended` described, whose
// successor is number `generation` (1 for the first regroup). Errors:
// Timeout on a non-leader that hears no answer within `window` plus two
// seconds (the leader is gone); InvalidArgument when the leader refuses the
// rank (the reason quoted); Transport when the leader cannot listen again.
Result<Regrouped> Regroup(const RendezvousConfig& ended, int generation, std::chrono::milliseconds window);

}  // namespace inferno
