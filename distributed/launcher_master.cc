#include "distributed/launcher_master.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "distributed/slurm_host_list.h"

namespace inferno {
namespace {

using GetEnv = std::function<const char*(const char*)>;

Result<std::string> Required(const GetEnv& getenv, const char* name, const char* launcher) {
  const char* value = getenv(name);
  if (value == nullptr || *value == '\0') {
    return Error::InvalidArgument(std::string(launcher) + " started this rank but " + name +
                                  " is unset or empty: set MASTER_ADDR and MASTER_PORT");
  }
  return std::string(value);
}

Result<uint64_t> ParseId(const char* name, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long parsed = std::strtoull(value.c_str(), &end, 10);
  if (errno != 0 || end == value.c_str() || *end != '\0' || value[0] == '-') {
    return Error::InvalidArgument(std::string(name) + "='" + value + "' is not a non-negative integer");
  }
  return static_cast<uint64_t>(parsed);
}

int PortFor(uint64_t id) { return kLauncherPortFirst + static_cast<int>(id % kLauncherPortCount); }

// The first address of the "tcp://a,b:port" part of an Open MPI URI such as
// "1734148096.0;tcp://192.0.2.2,10.0.0.1:36717;tcp6://[fd00::2]:36943".
Result<std::string> FirstTcpAddress(const std::string& uri) {
  std::string_view rest = uri;
  while (!rest.empty()) {
    const size_t end = std::min(rest.find(';'), rest.size());
    const std::string_view part = rest.substr(0, end);
    rest = end == rest.size() ? std::string_view() : rest.substr(end + 1);
    constexpr std::string_view kTcp = "tcp://";
    if (part.substr(0, kTcp.size()) != kTcp) continue;
    std::string_view addresses = part.substr(kTcp.size());
    addresses = addresses.substr(0, addresses.rfind(':'));
    const std::string_view first = addresses.substr(0, addresses.find(','));
    if (!first.empty()) return std::string(first);
  }
  return Error::InvalidArgument("OMPI_MCA_orte_hnp_uri='" + uri +
                                "' holds no tcp:// address of mpirun: set MASTER_ADDR and MASTER_PORT");
}

Result<LauncherMaster> OpenMpiMaster(const GetEnv& getenv) {
  constexpr char kLauncher[] = "Open MPI's mpirun";
  Result<std::string> uri = Required(getenv, "OMPI_MCA_orte_hnp_uri", kLauncher);
  if (!uri) return std::move(uri).error();
  Result<std::string> job = Required(getenv, "OMPI_MCA_ess_base_jobid", kLauncher);
  if (!job) return std::move(job).error();
  Result<std::string> addr = FirstTcpAddress(*uri);
  if (!addr) return std::move(addr).error();
  Result<uint64_t> job_id = ParseId("OMPI_MCA_ess_base_jobid", *job);
  if (!job_id) return std::move(job_id).error();
  return LauncherMaster{*addr, PortFor(*job_id),
                        "mpirun's host (OMPI_MCA_orte_hnp_uri) and a port from OMPI_MCA_ess_base_jobid"};
}

Result<LauncherMaster> SlurmMaster(const GetEnv& getenv) {
  constexpr char kLauncher[] = "Slurm";
  const char* step_nodes = getenv("SLURM_STEP_NODELIST");
  const char* list_name =
      step_nodes != nullptr && *step_nodes != '\0' ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
  Result<std::string> nodes = Required(getenv, list_name, kLauncher);
  if (!nodes) return std::move(nodes).error();
  Result<std::vector<std::string>> hosts = ExpandSlurmHostList(*nodes);
  if (!hosts) return std::move(hosts).error();
  Result<std::string> job = Required(getenv, "SLURM_JOB_ID", kLauncher);
  if (!job) return std::move(job).error();
  Result<uint64_t> job_id = ParseId("SLURM_JOB_ID", *job);
  if (!job_id) return std::move(job_id).error();
  uint64_t step_id = 0;
  if (const char* step = getenv("SLURM_STEP_ID")) {
    Result<uint64_t> parsed = ParseId("SLURM_STEP_ID", step);
    if (!parsed) return std::move(parsed).error();
    step_id = *parsed;
  }
  return LauncherMaster{
      hosts->front(), PortFor(*job_id % kLauncherPortCount + 1009 * (step_id % kLauncherPortCount)),
      std::string("the first host of ") + list_name + " and a port from SLURM_JOB_ID and SLURM_STEP_ID"};
}

}  // namespace

Result<LauncherMaster> FindLauncherMaster(ClusterLauncher launcher, const GetEnv& getenv) {
  return launcher == ClusterLauncher::kOpenMpi ? OpenMpiMaster(getenv) : SlurmMaster(getenv);
}

}  // namespace inferno
