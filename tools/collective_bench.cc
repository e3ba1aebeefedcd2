// collective_bench: the collective benchmark protocol (bench/bench_protocol.h)
// over our ProcessGroup, joined from the environment that //tools:launch (or
// mpirun, or srun) sets. Rank 0 prints one line per op and size:
//   <op> <bytes> <world> <median_us> <algbw_GBps> <busbw_GBps>
// Results are checked; any wrong element or failed call exits non-zero.
//
//   launch -n 4 -- collective_bench [--transport auto|shm|ipc|zmq|tcp] [--hierarchical] [--ops LIST]
//   [--sizes LIST] [--iters N]
//
// --transport auto (the library's default) uses shared memory
// (distributed/shm) between ranks on the same host and ZeroMQ between the
// others; shm uses shared memory between all ranks, which must then share one
// host; ipc uses ZeroMQ only, over ipc:// between ranks on the same host; zmq
// uses ZeroMQ only, over tcp:// between every pair; tcp uses the direct TCP
// data path between every pair (as across hosts, distributed/tcp). The
// environment variable INFERNO_TRANSPORT, when set, overrides the choice
// between auto, shm and ZeroMQ (see distributed/rendezvous.h).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "bench/bench_runner.h"
#include "distributed/host_all_reduce.h"
#include "distributed/process_group.h"
#include "distributed/rendezvous.h"

namespace inferno {
namespace {

class ProcessGroupBackend : public CollectiveBenchBackend {
 public:
  // `host_sum` (may be empty): all_reduce runs through it.
  ProcessGroupBackend(ProcessGroup group, std::optional<HostAllReduce> host_sum)
      : group_(std::move(group)), host_sum_(std::move(host_sum)) {}

  int rank() const override { return group_.rank(); }
  int world_size() const override { return group_.world_size(); }

  Status Barrier() override { return group_.barrier(); }

  Status AllReduceSum(std::span<float> data) override {
    if (host_sum_) return host_sum_->Sum(data);
    return group_.all_reduce(data, ReduceKind::kSum);
  }

  Status AllGather(std::span<const float> input, std::vector<float>& out) override {
    out.resize(input.size() * group_.world_size());
    return group_.all_gather(input, out);
  }

  Status BroadcastFromRank0(std::span<float> data) override { return group_.broadcast(/*root=*/0, data); }

  Status Send(int peer, std::span<const float> data) override {
    return group_.send_f32(peer, kPingPongTag, data);
  }

  Status Recv(int peer, std::vector<float>& out) override {
    auto received = group_.recv_f32(peer, kPingPongTag);
    if (!received) return received.error();
    out = *std::move(received);
    return {};
  }

  Status MaxAcrossRanks(std::span<double> values) override {
    std::vector<float> as_float(values.begin(), values.end());  // (values.size())
    if (auto reduced = group_.all_reduce(as_float, ReduceKind::kMax); !reduced) {
      return reduced.error();
    }
    std::copy(as_float.begin(), as_float.end(), values.begin());
    return {};
  }

 private:
  static constexpr uint32_t kPingPongTag = 1;

  ProcessGroup group_;
  std::optional<HostAllReduce> host_sum_;
};

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) {
  inferno::CommandSpec spec{
      "collective_bench", "[flags]  (run as launch -n N -- collective_bench ...)",
      "Runs the collective benchmark protocol over ProcessGroup; prints one line per op\n"
      "and size on rank 0.",
      inferno::BenchFlagSpecs()};
  spec.flags.push_back(
      {"transport", "T",
       "auto (shared memory on one host, else ZeroMQ), shm (every rank on one "
       "host), ipc or zmq (ZeroMQ only, over ipc:// or tcp://), tcp (the direct TCP data path) (default "
       "auto)"});
  spec.flags.push_back({"hierarchical", "",
                        "all_reduce in two levels (distributed/host_all_reduce.h): within each host, then "
                        "across hosts by one rank each"});
  const inferno::CommandLine flags = inferno::ParseCommandLineOrExit(argc, argv, spec);
  const std::string transport = flags.Last("transport").value_or("auto");
  auto config = inferno::ReadBenchConfig(flags);
  if (config && transport != "auto" && transport != "shm" && transport != "ipc" && transport != "zmq" &&
      transport != "tcp") {
    config = inferno::Error::InvalidArgument("--transport: expected auto, shm, ipc, zmq or tcp, got '" +
                                             transport + "'");
  }
  if (!config) {
    std::fprintf(stderr, "collective_bench: %s\n", config.error().message.c_str());
    return 2;
  }
  inferno::RendezvousOptions options;
  options.prefer_ipc_on_same_host = transport == "ipc";
  options.transport = transport == "auto"  ? inferno::TransportChoice::kAuto
                      : transport == "shm" ? inferno::TransportChoice::kShm
                      : transport == "tcp" ? inferno::TransportChoice::kTcp
                                           : inferno::TransportChoice::kZmq;
  auto group = inferno::JoinFromEnvironment(options);
  if (!group) {
    std::fprintf(stderr, "collective_bench: rendezvous: %s\n", group.error().ToString().c_str());
    return 1;
  }
  std::optional<inferno::HostAllReduce> host_sum;
  if (flags.Has("hierarchical")) {
    auto made = inferno::HostAllReduce::Make(*group);
    if (!made) {
      std::fprintf(stderr, "collective_bench: %s\n", made.error().ToString().c_str());
      return 1;
    }
    std::fprintf(stderr, "collective_bench: rank %d: all_reduce in %s\n", group->rank(),
                 made->two_levels() ? "two levels" : "one level (one host, or one rank per host)");
    host_sum = *std::move(made);
  }
  inferno::ProcessGroupBackend backend(*std::move(group), std::move(host_sum));
  return inferno::RunCollectiveBenchMain("collective_bench", backend, *config);
}
