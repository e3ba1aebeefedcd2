// mpi_bench: the collective benchmark protocol (bench/bench_protocol.h) over
// Open MPI, a yardstick for //tools:collective_bench. Not a product dependency.
//
//   mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self -np 2
//          mpi_bench [--ops LIST] [--sizes LIST] [--iters N]
#include <mpi.h>

#include <cstdio>

#include "bench/bench_runner.h"

namespace inferno {
namespace {

// MPI's default error handler aborts the job on failure, which is the right
// behaviour for a yardstick; the status checks below only catch what it lets
// through.
class MpiBackend : public CollectiveBenchBackend {
 public:
  MpiBackend() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  Status Barrier() override { return Check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  Status AllReduceSum(std::span<float> data) override {
    return Check(
        MPI_Allreduce(MPI_IN_PLACE, data.data(), Count(data.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
  }

  Status AllGather(std::span<const float> input, std::vector<float>& out) override {
    out.resize(input.size() * world_size_);
    return Check(MPI_Allgather(input.data(), Count(input.size()), MPI_FLOAT, out.data(), Count(input.size()),
                               MPI_FLOAT, MPI_COMM_WORLD),
                 "MPI_Allgather");
  }

  Status BroadcastFromRank0(std::span<float> data) override {
    return Check(MPI_Bcast(data.data(), Count(data.size()), MPI_FLOAT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }

  Status Send(int peer, std::span<const float> data) override {
    return Check(MPI_Send(data.data(), Count(data.size()), MPI_FLOAT, peer, kTag, MPI_COMM_WORLD),
                 "MPI_Send");
  }

  Status Recv(int peer, std::vector<float>& out) override {
    return Check(
        MPI_Recv(out.data(), Count(out.size()), MPI_FLOAT, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        "MPI_Recv");
  }

  Status MaxAcrossRanks(std::span<double> values) override {
    return Check(
        MPI_Allreduce(MPI_IN_PLACE, values.data(), Count(values.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
        "MPI_Allreduce(MAX)");
  }

 private:
  static constexpr int kTag = 7;

  static int Count(size_t n) { return static_cast<int>(n); }

  static Status Check(int code, const char* call) {
    if (code == MPI_SUCCESS) return {};
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    return Error::Transport(std::string(call) + ": " + std::string(text, length));
  }

  int rank_ = 0;
  int world_size_ = 1;
};

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) {
  const inferno::CommandSpec spec{"mpi_bench", "[flags]  (run as mpirun ... mpi_bench ...)",
                                  "Runs the collective benchmark protocol over Open MPI.",
                                  inferno::BenchFlagSpecs()};
  // --help and flag errors are answered before MPI_Init: they need no MPI,
  // and Open MPI's initialization keeps allocations LeakSanitizer reports.
  auto flags = inferno::CommandLine::Parse(argc, argv, spec);
  if (flags && flags->help_requested()) {
    std::fputs(inferno::Usage(spec).c_str(), stdout);
    return 0;
  }
  auto config =
      flags ? inferno::ReadBenchConfig(*flags) : inferno::Result<inferno::BenchConfig>(flags.error());
  if (!config) {
    std::fprintf(stderr, "mpi_bench: %s\n", config.error().message.c_str());
    return 2;
  }
  MPI_Init(&argc, &argv);
  inferno::MpiBackend backend;
  const int status = inferno::RunCollectiveBenchMain("mpi_bench", backend, *config);
  // The other ranks may be waiting in a collective this rank left.
  if (status != 0) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
  return status;
}
