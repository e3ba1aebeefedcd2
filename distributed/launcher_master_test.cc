#include "distributed/launcher_master.h"

#include <map>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace inferno {
namespace {

using ::testing::HasSubstr;

std::function<const char*(const char*)> FakeEnvironment(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

// As Debian's Open MPI 4.1.4 sets them for a rank of `mpirun -np 2`.
std::map<std::string, std::string> OpenMpiVariables() {
  return {{"OMPI_MCA_orte_hnp_uri", "1734148096.0;tcp://192.0.2.2,10.1.0.7:36717;tcp6://[fd00::2]:36943"},
          {"OMPI_MCA_ess_base_jobid", "1734148097"}};
}

TEST(LauncherMaster, OpenMpiGivesMpirunsFirstTcpAddressAndAPortFromTheJobId) {
  Result<LauncherMaster> master =
      FindLauncherMaster(ClusterLauncher::kOpenMpi, FakeEnvironment(OpenMpiVariables()));
  ASSERT_TRUE(master) << master.error().ToString();
  EXPECT_EQ(master->addr, "192.0.2.2");
  EXPECT_EQ(master->port, kLauncherPortFirst + 1734148097 % kLauncherPortCount);
  EXPECT_THAT(master->source, HasSubstr("OMPI_MCA_orte_hnp_uri"));
}

TEST(LauncherMaster, OpenMpiWithoutItsVariablesNamesTheMissingOne) {
  for (const char* name : {"OMPI_MCA_orte_hnp_uri", "OMPI_MCA_ess_base_jobid"}) {
    std::map<std::string, std::string> variables = OpenMpiVariables();
    variables.erase(name);
    Result<LauncherMaster> master = FindLauncherMaster(ClusterLauncher::kOpenMpi, FakeEnvironment(variables));
    ASSERT_FALSE(master) << name;
    EXPECT_THAT(master.error().message, HasSubstr(name));
    EXPECT_THAT(master.error().message, HasSubstr("MASTER_ADDR and MASTER_PORT"));
  }
}

TEST(LauncherMaster, OpenMpiUriWithoutTcpOrWithABadJobIdIsRefused) {
  std::map<std::string, std::string> variables = OpenMpiVariables();
  variables["OMPI_MCA_orte_hnp_uri"] = "1.0;tcp6://[fd00::2]:36943";
  Result<LauncherMaster> master = FindLauncherMaster(ClusterLauncher::kOpenMpi, FakeEnvironment(variables));
  ASSERT_FALSE(master);
  EXPECT_THAT(master.error().message, HasSubstr("no tcp:// address"));
  variables = OpenMpiVariables();
  variables["OMPI_MCA_ess_base_jobid"] = "12x";
  master = FindLauncherMaster(ClusterLauncher::kOpenMpi, FakeEnvironment(variables));
  ASSERT_FALSE(master);
  EXPECT_THAT(master.error().message, HasSubstr("OMPI_MCA_ess_base_jobid='12x'"));
}

TEST(LauncherMaster, SlurmGivesTheStepsFirstHostAndAPortFromJobAndStep) {
  std::map<std::string, std::string> variables = {{"SLURM_JOB_NODELIST", "login,node[01-04]"},
                                                  {"SLURM_STEP_NODELIST", "node[03-04]"},
                                                  {"SLURM_JOB_ID", "123456"},
                                                  {"SLURM_STEP_ID", "2"}};
  Result<LauncherMaster> master = FindLauncherMaster(ClusterLauncher::kSlurm, FakeEnvironment(variables));
  ASSERT_TRUE(master) << master.error().ToString();
  EXPECT_EQ(master->addr, "node03");
  EXPECT_EQ(master->port, kLauncherPortFirst + (123456 + 1009 * 2) % kLauncherPortCount);
  variables.erase("SLURM_STEP_NODELIST");
  variables.erase("SLURM_STEP_ID");
  master = FindLauncherMaster(ClusterLauncher::kSlurm, FakeEnvironment(variables));
  ASSERT_TRUE(master) << master.error().ToString();
  EXPECT_EQ(master->addr, "login");
  EXPECT_EQ(master->port, kLauncherPortFirst + 123456 % kLauncherPortCount);
}

TEST(LauncherMaster, ConsecutiveSlurmJobsAndStepsGetDifferentPortsInTheRange) {
  std::map<int, int> seen;
  for (int job = 1000; job < 1010; ++job) {
    for (int step = 0; step < 3; ++step) {
      Result<LauncherMaster> master = FindLauncherMaster(
          ClusterLauncher::kSlurm, FakeEnvironment({{"SLURM_JOB_NODELIST", "n1"},
                                                    {"SLURM_JOB_ID", std::to_string(job)},
                                                    {"SLURM_STEP_ID", std::to_string(step)}}));
      ASSERT_TRUE(master) << master.error().ToString();
      EXPECT_GE(master->port, kLauncherPortFirst);
      EXPECT_LT(master->port, kLauncherPortFirst + kLauncherPortCount);
      EXPECT_TRUE(seen.emplace(master->port, job).second) << "job " << job << " step " << step;
    }
  }
}

TEST(LauncherMaster, SlurmWithABadNodeListOrJobIdIsRefused) {
  Result<LauncherMaster> master = FindLauncherMaster(
      ClusterLauncher::kSlurm, FakeEnvironment({{"SLURM_JOB_NODELIST", "node[1-"}, {"SLURM_JOB_ID", "7"}}));
  ASSERT_FALSE(master);
  EXPECT_THAT(master.error().message, HasSubstr("'node[1-'"));
  master = FindLauncherMaster(ClusterLauncher::kSlurm, FakeEnvironment({{"SLURM_JOB_NODELIST", "n1"}}));
  ASSERT_FALSE(master);
  EXPECT_THAT(master.error().message, HasSubstr("SLURM_JOB_ID"));
  master = FindLauncherMaster(ClusterLauncher::kSlurm,
                              FakeEnvironment({{"SLURM_JOB_NODELIST", "n1"}, {"SLURM_JOB_ID", "-3"}}));
  ASSERT_FALSE(master);
  EXPECT_THAT(master.error().message, HasSubstr("SLURM_JOB_ID='-3'"));
}

}  // namespace
}  // namespace inferno
