// LaunchOptions: what `launch` was asked to run, parsed from its command line.
//
//   launch -n 4 [--tag-output] [--timeout SECONDS] [--grace SECONDS] [--insecure]
//          [--transport auto|zmq|shm|tcp] [--bind core|none] [--failover [--standby N]]
//          [--nnodes N --node-rank R --master-addr ADDR --master-port PORT]
//          [--] PROGRAM ARGS...
//   launch --join ADDR:PORT [--standby N] [--standby-index I] [--] PROGRAM ARGS...
//
// Thread-safety: a plain value type.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "base/error.h"
#include "distributed/transport_choice.h"

namespace inferno {

// Where the ranks of this node run.
enum class CpuBinding {
  // The CPUs launch may run on are cut into as many equal runs as the node
  // has ranks, and local rank i runs only on the i-th (one rank: all of
  // them, so its threads keep every CPU), when the ranks do not outnumber
  // those CPUs (else as kNone); as mpirun binds two ranks. Without it the
  // kernel tends to keep two ranks that wake each other on one CPU: a
  // 2-rank 4 KiB all_reduce over shared memory then takes 18 us instead of
  // 1.2 (docs/collectives.md).
  kCore,
  // The kernel places them.
  kNone,
};

struct LaunchOptions {
  // Ranks started on this node (-n).
  int ranks_per_node = 1;
  // Nodes in the job, and this node's index in [0, nnodes). Ranks on this node
  // are node_rank * ranks_per_node .. + ranks_per_node - 1.
  int nnodes = 1;
  int node_rank = 0;
  // Where rank 0 listens for the rendezvous. Port 0 means "pick a free port on
  // this host", which only single-node jobs may do.
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // Prefix every output line of rank r with "[r] ".
  bool tag_output = false;
  // Stop the whole job after this long; zero means no limit.
  std::chrono::milliseconds timeout{0};
  // false (the default): the ranks get a job secret (INFERNO_JOB_SECRET,
  // taken from launch's environment if set there, else fresh; or the
  // INFERNO_JOB_SECRET_FILE of launch's environment), so only they
  // can join the job or send to it (see distributed/job_secret.h).
  // true: they get INFERNO_INSECURE=1 and no secret, and admit anyone who
  // reaches them.
  bool insecure = false;
  // Set: the ranks get it as INFERNO_TRANSPORT (what carries their data, see
  // distributed/transport_choice.h). Unset: they inherit launch's environment.
  std::optional<TransportChoice> transport;
  // --bind; by default kCore, but kNone with --transport zmq, whose ranks
  // need a second CPU for ZeroMQ's I/O threads (pinned, a 2-rank 4 KiB
  // all_reduce over tcp took 75 us instead of 46: docs/collectives.md).
  CpuBinding binding = CpuBinding::kCore;
  // --failover: a rank that exits non-zero or is killed, rank 0 included,
  // does not stop the others (the survivors carry on without it, e.g. serve
  // --failover, where a standby or rank 1 takes a lost rank 0's role); the
  // first rank to exit with 0 stops the job (it ends once its leader has
  // ended it; a lost rank may be frozen, not dead), whose status is then 0;
  // if every rank fails, the status is the last one's.
  bool failover = false;
  // --standby N (with --failover only): N more processes of the command on
  // this node, standby ranks (distributed/standby_rank.h): each gets
  // INFERNO_STANDBY (its index over the job, node_rank * standby + i) in
  // place of RANK, and holds no place in the job until it takes a lost
  // rank's (serve --failover). Every process of the job gets
  // INFERNO_STANDBY_RANKS = nnodes * standby. A standby's failure is
  // reported, as a rank's other than 0, and the job carries on.
  int standby = 0;
  // The first standby rank's index (INFERNO_STANDBY): node_rank * standby,
  // or with --join, --standby-index (default: launch's process id, so
  // replacements started apart do not share one).
  int first_standby_index = 0;
  // --join ADDR:PORT: start no ranks, only `standby` (default 1) standby
  // ranks of a running job whose leader is at ADDR:PORT (its MASTER_ADDR
  // and MASTER_PORT, set in master_addr and master_port): replacements
  // started later, on any host, which take a lost rank's place or grow a
  // job running below its size back (serve --failover). They get the job's
  // secret from launch's environment (INFERNO_JOB_SECRET or
  // INFERNO_JOB_SECRET_FILE; never a fresh one) and no WORLD_SIZE (the
  // leader tells them the job's size).
  bool join = false;
  // Time between SIGTERM and SIGKILL when stopping ranks.
  std::chrono::milliseconds grace{std::chrono::seconds(5)};
  // The program and its arguments (argv[0] first).
  std::vector<std::string> command;

  int world_size() const { return nnodes * ranks_per_node; }
};

// What launch accepts: its --help and the syntax ParseCommandLineOrExit checks.
const CommandSpec& LaunchCommandSpec();

// Checks the values of `flags` (parsed with LaunchCommandSpec()): ranges, a
// command to run, and the flags a multi-node job needs. Errors are
// InvalidArgument, one line naming the flag and the offending value, e.g.
// "-n: expected an integer in [1, 4096], got 'abc'".
Result<LaunchOptions> ParseLaunchOptions(const CommandLine& flags);

}  // namespace inferno
