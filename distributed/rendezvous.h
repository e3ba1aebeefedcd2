// Rendezvous: how the ranks of a job find each other and become one
// ProcessGroup.
//
// Every rank binds its own ZeroMQ endpoint (tcp on port 0, plus an ipc://
// path in a private directory, used by peers on the same host) and,
// unless told to use ZeroMQ only, creates a shared-memory inbox
// (distributed/shm), and reports both with its HostIdentity to rank 0, which
// listens at MASTER_ADDR:MASTER_PORT and sends every rank the table of
// endpoints and a job id. Ranks then connect to each other, run a barrier,
// and return. Which peers talk over shared memory is decided from the table
// (see TransportChoice), so both ranks of a pair decide alike; pairs on
// different hosts of a job with a secret (and every pair under
// INFERNO_TRANSPORT=tcp) carry their data over the direct TCP data path
// (distributed/tcp), whose port and key every rank reports in the table
// too; ZeroMQ always connects every pair, as the control plane (see
// distributed/routed). With a
// job secret (INFERNO_JOB_SECRET; required from the environment unless
// INFERNO_INSECURE=1), the rendezvous and every connection after it admit
// only processes holding the secret, before any routing id or byte of theirs
// is accepted (see distributed/zmq/curve_auth.h). Rank 0 listens only on
// MASTER_ADDR (resolved if a name), each rank only on its address toward it
// and an ipc:// socket file in its own private directory (see
// distributed/ipc_directory.h): on one host, loopback.
//
//   Result<ProcessGroup> group = JoinFromEnvironment();
//   if (!group) { LOG(ERROR) << group.error().ToString(); return 1; }
//
// Thread-safety: the functions may be called from several threads at once
// (tests run ranks as threads); each call builds its own transport.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "base/error.h"
#include "distributed/job_secret.h"
#include "distributed/process_group.h"
#include "distributed/transport_choice.h"

namespace inferno {

struct RendezvousOptions {
  // How long rank 0 waits for every rank to arrive; the other ranks wait for
  // the table two seconds longer, to hear rank 0's verdict. The environment
  // variable INFERNO_RENDEZVOUS_TIMEOUT_MS overrides it.
  std::chrono::milliseconds timeout{30000};
  // How long each later wait of the group may take (Transport::timeout()).
  // The environment variable INFERNO_TIMEOUT_MS overrides it.
  std::chrono::milliseconds op_timeout{60000};
  // Connect to peers on the same host over ipc:// instead of tcp://.
  bool prefer_ipc_on_same_host = true;
  // What carries the data between ranks; with kShm every rank must be on
  // this host, else Join fails with InvalidArgument. The environment
  // variable INFERNO_TRANSPORT (auto, zmq, shm or tcp) overrides it; tcp
  // also turns prefer_ipc_on_same_host off.
  TransportChoice transport = TransportChoice::kAuto;
  // Called on rank 0 once it listens, with the bound port (useful when
  // MASTER_PORT is 0, as in tests that run ranks as threads).
  std::function<void(int port)> on_master_listening;
  // What this rank runs, as named short texts (e.g. "model" -> a digest of
  // its config): every rank reports it and rank 0 compares it with its own,
  // so ranks that would compute different things never start together.
  std::map<std::string, std::string> fingerprint;
};

// Where this rank is and where rank 0 listens, as read from the environment.
struct RendezvousConfig {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: rank 0 picks a free port
  // INFERNO_TIMEOUT_MS if set, else RendezvousOptions::op_timeout.
  std::chrono::milliseconds op_timeout{0};
  // INFERNO_RENDEZVOUS_TIMEOUT_MS if set: replaces RendezvousOptions::timeout.
  std::optional<std::chrono::milliseconds> rendezvous_timeout;
  // Where master_addr and master_port came from when a cluster launcher's
  // variables gave them (see LauncherMaster::source); empty otherwise. Join's
  // errors quote it.
  std::string master_source;
  // INFERNO_JOB_SECRET, or the contents of INFERNO_JOB_SECRET_FILE, if set:
  // the job is secured with it. Unset only in a 1-rank world or with
  // INFERNO_INSECURE=1.
  std::optional<JobSecret> job_secret;
  // INFERNO_TRANSPORT if set: replaces RendezvousOptions::transport.
  std::optional<TransportChoice> transport;
  // INFERNO_STANDBY if set: this process is that standby rank of the job
  // (distributed/standby_rank.h), with no rank yet (rank is -1), waiting for
  // a lost rank's place (AwaitPlace in distributed/regroup.h).
  std::optional<int> standby;
  // INFERNO_STANDBY_RANKS if set: how many standby ranks the job started.
  int standby_ranks = 0;
};

// Reads RANK/WORLD_SIZE (or OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, or
// SLURM_PROCID/SLURM_NTASKS, the first pair set; Slurm's only in a task of a
// job step, where SLURM_STEP_ID is set, not in a batch script's own shell,
// which is then one rank), MASTER_ADDR, MASTER_PORT,
// INFERNO_TIMEOUT_MS, INFERNO_RENDEZVOUS_TIMEOUT_MS, INFERNO_JOB_SECRET,
// INFERNO_JOB_SECRET_FILE, INFERNO_INSECURE, INFERNO_TRANSPORT,
// INFERNO_STANDBY (in place of RANK) and INFERNO_STANDBY_RANKS through
// `getenv` (nullptr: unset). With no rank variables set: rank 0 of a 1-rank
// world. When Open MPI's or Slurm's rank variables give a world size > 1,
// MASTER_ADDR and MASTER_PORT, each where unset, come from the launcher's
// variables (see distributed/launcher_master.h). Errors (InvalidArgument
// naming the variable and value, but never the secret's): a non-numeric or
// out-of-range value, a world size > 1 from RANK/WORLD_SIZE without
// MASTER_ADDR or MASTER_PORT, a launcher's variables that do not give them
// (FindLauncherMaster's errors), a world size > 1 with neither a secret nor
// INFERNO_INSECURE=1 (the message names the ways out), INFERNO_JOB_SECRET and
// INFERNO_JOB_SECRET_FILE both set, a secret beside INFERNO_INSECURE,
// INFERNO_INSECURE other than 1, a malformed INFERNO_JOB_SECRET (set but
// empty included), ReadJobSecretFile's errors, an INFERNO_TRANSPORT other
// than auto, zmq, shm or tcp, INFERNO_STANDBY beside RANK.
Result<RendezvousConfig> ReadRendezvousConfig(const std::function<const char*(const char*)>& getenv,
                                              const RendezvousOptions& options = {});

// Where `theirs` (rank `rank`'s fingerprint, see RendezvousOptions) differs
// from rank 0's `mine`: "rank R and rank 0 run different things: NAME is
// 'X' on rank R, 'Y' on rank 0", naming the first entry that differs; empty
// when they agree. Join compares with it; so does a rank that learns rank 0's
// fingerprint later (runtime/weight_transfer.h).
std::string FingerprintDifference(int rank, const std::map<std::string, std::string>& theirs,
                                  const std::map<std::string, std::string>& mine);

// Joins the group described by `config`. Rank 0 ignores the calls of
// standby ranks that reach its rendezvous (they are for a regroup). Errors:
// InvalidArgument for a
// standby rank's config (config.standby: it has no place yet); Io naming the path when
// the private ipc directory cannot be made (see IpcDirectory); Transport naming addr:port
// when rank 0 cannot listen (e.g. the port is in use), or when rank 0 refuses
// this rank's key (its job secret differs, or only one side has one; rank 0
// itself then times out listing the rank as missing); Timeout listing the
// ranks that never arrived (rank 0) or naming the master (other ranks);
// InvalidArgument when ranks disagree on the world size or the fingerprint
// (on every rank, naming the two ranks and the entry that differs) or a rank
// arrives twice. When config.master_source is set, the errors of reaching
// rank 0 end by saying where its address came from and that MASTER_ADDR and
// MASTER_PORT choose another.
Result<ProcessGroup> Join(const RendezvousConfig& config, const RendezvousOptions& options = {});

// WatchLauncherLifeline(std::getenv) (a rank started by launch ends when
// launch does), ReadRendezvousConfig(std::getenv), then Join. With none of
// the variables set: a 1-rank group.
Result<ProcessGroup> JoinFromEnvironment(const RendezvousOptions& options = {});

}  // namespace inferno
