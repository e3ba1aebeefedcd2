#include "base/default_threads.h"

#include <map>

#include <gtest/gtest.h>

namespace inferno {
namespace {

EnvironmentLookup Env(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    const auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(DefaultThreads, AloneTakesEveryAllowedCpu) { EXPECT_EQ(DefaultThreads(2, Env({})).threads, 2); }

TEST(DefaultThreads, UnboundRanksShareTheirHostsCpus) {
  EXPECT_EQ(DefaultThreads(8, Env({{"LOCAL_WORLD_SIZE", "2"}})).threads, 4);
  EXPECT_EQ(DefaultThreads(2, Env({{"LOCAL_WORLD_SIZE", "3"}})).threads, 1) << "never below 1";
  EXPECT_EQ(DefaultThreads(8, Env({{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}})).threads, 2);
  EXPECT_EQ(
      DefaultThreads(
          8, Env({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "5"}, {"SLURM_STEP_NUM_NODES", "2"}}))
          .threads,
      2)
      << "3 ranks on the busiest node";
  EXPECT_EQ(DefaultThreads(8, Env({{"SLURM_STEP_NUM_TASKS", "5"}, {"SLURM_STEP_NUM_NODES", "2"}})).threads, 8)
      << "a batch script's shell is no step";
}

TEST(DefaultThreads, BoundRanksTakeTheirOwnCpusAndBadValuesCountAsAbsent) {
  const ThreadDefault bound =
      DefaultThreads(3, Env({{"INFERNO_CPUS_BOUND", "1"}, {"LOCAL_WORLD_SIZE", "2"}}));
  EXPECT_EQ(bound.threads, 3);
  EXPECT_NE(bound.reason.find("bound"), std::string::npos) << bound.reason;
  EXPECT_EQ(DefaultThreads(4, Env({{"LOCAL_WORLD_SIZE", "two"}})).threads, 4);
  EXPECT_EQ(DefaultThreads(4, Env({{"LOCAL_WORLD_SIZE", "0"}})).threads, 4);
}

}  // namespace
}  // namespace inferno
