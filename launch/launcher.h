// Launcher: runs one node's share of a multi-rank job as child processes and
// supervises them, in the manner of torchrun and mpirun.
//
// Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK,
// MASTER_ADDR and MASTER_PORT (and loses any OMPI_COMM_WORLD_* / SLURM_PROCID /
// SLURM_NTASKS it inherited, so the environment names one rank unambiguously),
// and INFERNO_JOB_SECRET (or the INFERNO_JOB_SECRET_FILE launch has), or
// with --insecure INFERNO_INSECURE=1 (see LaunchOptions::insecure).
// Ranks read stdin from /dev/null. Each rank runs in its own process group, so
// stopping a rank also stops the processes it started, and whatever a rank
// leaves running in its group is killed once every rank has exited. Each rank
// is also killed by the kernel (PR_SET_PDEATHSIG) if the launcher itself dies;
// processes the ranks started do not get that guarantee.
//
// Thread-safety: RunRanks must be called from a single-threaded process (it
// forks, blocks signals and owns SIGCHLD while it runs), at most once.
#pragma once

#include <string>

#include "base/error.h"
#include "launch/launch_options.h"

namespace inferno {

// Starts options.ranks_per_node ranks of options.command and waits until all
// have exited. Returns the job's exit status:
// - 0 if every rank exited with 0;
// - the first failed rank's exit status (128 + signal if it was killed by a
//   signal) — the other ranks then get SIGTERM, and SIGKILL after options.grace;
//   With options.failover, no failure does that: a failed rank (rank 0
//   included) is reported on stderr and the others carry on; the first
//   rank's exit with 0 then stops the ranks still running as a failure
//   would, and the job's status is 0; if every rank fails, the last one's
//   status is the job's;
// - 124 if options.timeout passed first;
// - 128 + signal if the launcher got SIGINT, SIGTERM or SIGHUP (a second such
//   signal skips the grace period). A signal the launcher inherited as ignored
//   (nohup, a background job of a non-interactive shell) stays ignored.
// Returns an error (one line) if the job could not be started, e.g. no free
// port at options.master_addr, fork failed, or no usable secret (a
// malformed one, or none for a multi-node job without --insecure); ranks already started are stopped.
Result<int> RunRanks(const LaunchOptions& options);

}  // namespace inferno
