// LauncherMaster: where rank 0 of a job listens when a cluster launcher
// started the ranks and the user set no MASTER_ADDR or MASTER_PORT. Every
// rank computes the same answer from variables the launcher gives each of
// them, so no rank has to tell the others anything first:
//
//   Open MPI's mpirun (OMPI_COMM_WORLD_RANK set): the address is the first
//     tcp:// address of mpirun itself, from OMPI_MCA_orte_hnp_uri (e.g.
//     "1734148096.0;tcp://192.0.2.2,10.0.0.1:36717" -> 192.0.2.2). Rank 0
//     must then run on mpirun's host, where Open MPI 4.1 maps it whenever
//     that host is one of the job's; elsewhere rank 0 cannot listen there
//     and says so. The port is
//     kLauncherPortFirst + OMPI_MCA_ess_base_jobid mod kLauncherPortCount.
//   Slurm's srun (SLURM_PROCID set): the address is the first host of
//     SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST), where srun's block
//     distribution puts task 0. The port is kLauncherPortFirst +
//     (SLURM_JOB_ID + 1009 * SLURM_STEP_ID) mod kLauncherPortCount, so
//     consecutive jobs and the steps of one job get different ports.
//
// The range 20000-29999 lies below Linux's ephemeral ports (32768-60999).
// If another process holds the port, rank 0 fails naming it; MASTER_PORT
// then picks another.
//
// Thread-safety: free functions on values; safe from any thread.
#pragma once

#include <functional>
#include <string>

#include "base/error.h"

namespace inferno {

inline constexpr int kLauncherPortFirst = 20000;
inline constexpr int kLauncherPortCount = 10000;

enum class ClusterLauncher { kOpenMpi, kSlurm };

struct LauncherMaster {
  std::string addr;
  int port = 0;
  // Where addr and port came from, for error messages, e.g. "mpirun's host
  // (OMPI_MCA_orte_hnp_uri) and OMPI_MCA_ess_base_jobid".
  std::string source;
};

// Rank 0's address and port under `launcher`, read through `getenv`
// (nullptr: unset). Errors (InvalidArgument naming the variable and its
// value): a variable above unset, empty or malformed (no tcp:// address in
// the URI, a job id that is not a number, a bad host list).
Result<LauncherMaster> FindLauncherMaster(ClusterLauncher launcher,
                                          const std::function<const char*(const char*)>& getenv);

}  // namespace inferno
