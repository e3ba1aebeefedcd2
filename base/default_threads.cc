#include "base/default_threads.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace inferno {
namespace {

// A positive integer variable; nullopt when absent or not one.
std::optional<int> PositiveInt(const EnvironmentLookup& env, const std::string& name) {
  const std::optional<std::string> text = env(name);
  if (!text) return std::nullopt;
  int value = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || value < 1) return std::nullopt;
  return value;
}

// The ranks of this host that share its CPUs, and the variable that said so.
std::pair<int, std::string> SharingRanks(const EnvironmentLookup& env) {
  if (env("INFERNO_CPUS_BOUND") == "1") return {1, "bound to its own CPUs by launch"};
  for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
    if (const std::optional<int> ranks = PositiveInt(env, name)) return {*ranks, name};
  }
  if (env("SLURM_STEP_ID")) {
    const std::optional<int> tasks = PositiveInt(env, "SLURM_STEP_NUM_TASKS");
    const std::optional<int> nodes = PositiveInt(env, "SLURM_STEP_NUM_NODES");
    if (tasks && nodes)
      return {(*tasks + *nodes - 1) / *nodes, "SLURM_STEP_NUM_TASKS / SLURM_STEP_NUM_NODES"};
  }
  return {1, "no launcher"};
}

}  // namespace

ThreadDefault DefaultThreads(int allowed_cpus, const EnvironmentLookup& env) {
  const auto [ranks, source] = SharingRanks(env);
  const int cpus = std::max(allowed_cpus, 1);
  return {std::max(cpus / ranks, 1), std::to_string(cpus) + " CPUs allowed, shared by " +
                                         std::to_string(ranks) + " rank(s) on this host (" + source + ")"};
}

ThreadDefault DefaultThreads() {
  cpu_set_t allowed;
  const int cpus = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 ? CPU_COUNT(&allowed) : 1;
  return DefaultThreads(cpus, [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  });
}

std::string ThreadsFlagHelp() {
  const ThreadDefault here = DefaultThreads();
  return "compute threads per rank (default: the CPUs this rank may use, shared among its host's ranks; "
         "here " +
         std::to_string(here.threads) + ": " + here.reason + ")";
}

}  // namespace inferno
