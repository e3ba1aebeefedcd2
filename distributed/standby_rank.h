// Standby ranks: processes started with a job (`launch --standby N`) that
// hold no place in it until a rank is lost, then take the lost rank's place
// at the regroup (distributed/regroup.h). These are the variables launch
// sets to tell them, and the job's ranks, apart.
//
// Thread-safety: constants only.
#pragma once

namespace inferno {

// Set (to the standby's index, 0 first) instead of RANK in a standby rank's
// environment; WORLD_SIZE is the job's. ReadRendezvousConfig reads it into
// RendezvousConfig::standby, and Join refuses such a config.
inline constexpr char kStandbyVariable[] = "INFERNO_STANDBY";

// Set in every process of a job with standby ranks: how many were started
// (over all nodes). The leader waits for that many at most at a regroup.
inline constexpr char kStandbyRanksVariable[] = "INFERNO_STANDBY_RANKS";

}  // namespace inferno
