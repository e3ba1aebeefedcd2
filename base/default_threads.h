// DefaultThreads: how many compute threads a rank takes when --threads is
// not given — the CPUs its affinity mask allows, shared among the ranks of
// its host that run on the same CPUs.
//
// A rank that its launcher bound to CPUs of its own (//tools:launch sets
// INFERNO_CPUS_BOUND=1 when it binds, the default) takes every CPU of its
// mask. Otherwise the mask is taken as shared by the host's ranks, counted
// from the launcher's variables: LOCAL_WORLD_SIZE (launch, torchrun),
// OMPI_COMM_WORLD_LOCAL_SIZE (Open MPI), or within a Slurm step
// SLURM_STEP_NUM_TASKS over SLURM_STEP_NUM_NODES, rounded up; alone, 1.
//
// Thread-safety: reads the environment and the affinity mask; call from
// main() before starting threads.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace inferno {

struct ThreadDefault {
  int threads = 1;
  std::string reason;  // e.g. "2 CPUs allowed, 1 rank on this host" (for --help and logs)
};

// The environment as a function, so tests need not set the real one.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// `allowed_cpus` (the affinity mask's count) over the sharing ranks that
// `env` gives, at least 1.
ThreadDefault DefaultThreads(int allowed_cpus, const EnvironmentLookup& env);

// The same for this process: its affinity mask and environment.
ThreadDefault DefaultThreads();

// --threads' help line, saying what the default resolves to here.
std::string ThreadsFlagHelp();

}  // namespace inferno
