// gloo_bench: the collective benchmark protocol (bench/bench_protocol.h) over
// Gloo's TCP transport, a yardstick for //tools:collective_bench. Not a product
// dependency. Run under //tools:launch, which sets RANK and WORLD_SIZE; ranks
// meet through a gloo::rendezvous::FileStore in an empty directory that all
// of them can reach (one host, or a shared file system):
//
//   launch -n 2 -- gloo_bench --store "$(mktemp -d)" [--ops LIST] [--sizes LIST] [--iters N]
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include "bench/bench_runner.h"

namespace inferno {
namespace {

// Gloo reports failures as exceptions; they become errors here and nowhere else.
template <typename Call>
Status Guarded(const char* what, Call&& call) {
  try {
    call();
    return {};
  } catch (const std::exception& e) {
    return Error::Transport(std::string(what) + ": " + e.what());
  }
}

class GlooBackend : public CollectiveBenchBackend {
 public:
  explicit GlooBackend(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {}

  // Connects `rank` of `world_size` to the others over TCP on 127.0.0.1,
  // exchanging addresses through files in `store_dir`.
  static Result<std::unique_ptr<GlooBackend>> Connect(int rank, int world_size,
                                                      const std::string& store_dir) {
    std::shared_ptr<gloo::rendezvous::Context> context;
    auto connected = Guarded("connecting through FileStore", [&] {
      gloo::transport::tcp::attr attr;
      attr.hostname = "127.0.0.1";
      auto device = gloo::transport::tcp::CreateDevice(attr);
      gloo::rendezvous::FileStore store(store_dir);
      context = std::make_shared<gloo::rendezvous::Context>(rank, world_size);
      context->connectFullMesh(store, device);
    });
    if (!connected) return connected.error();
    return std::make_unique<GlooBackend>(std::move(context));
  }

  int rank() const override { return context_->rank; }
  int world_size() const override { return context_->size; }

  Status Barrier() override {
    return Guarded("gloo::barrier", [&] {
      gloo::BarrierOptions options(context_);
      gloo::barrier(options);
    });
  }

  Status AllReduceSum(std::span<float> data) override {
    return Guarded("gloo::allreduce", [&] {
      gloo::AllreduceOptions options(context_);
      options.setOutput(data.data(), data.size());
      options.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      gloo::allreduce(options);
    });
  }

  Status AllGather(std::span<const float> input, std::vector<float>& out) override {
    out.resize(input.size() * context_->size);
    return Guarded("gloo::allgather", [&] {
      gloo::AllgatherOptions options(context_);
      options.setInput(const_cast<float*>(input.data()), input.size());
      options.setOutput(out.data(), out.size());
      gloo::allgather(options);
    });
  }

  Status BroadcastFromRank0(std::span<float> data) override {
    return Guarded("gloo::broadcast", [&] {
      gloo::BroadcastOptions options(context_);
      options.setOutput(data.data(), data.size());
      options.setRoot(0);
      gloo::broadcast(options);
    });
  }

  Status Send(int peer, std::span<const float> data) override {
    return Guarded("UnboundBuffer::send", [&] {
      auto buffer = context_->createUnboundBuffer(const_cast<float*>(data.data()), data.size_bytes());
      buffer->send(peer, kPointToPointSlot);
      buffer->waitSend();
    });
  }

  Status Recv(int peer, std::vector<float>& out) override {
    return Guarded("UnboundBuffer::recv", [&] {
      auto buffer = context_->createUnboundBuffer(out.data(), out.size() * sizeof(float));
      buffer->recv(peer, kPointToPointSlot);
      buffer->waitRecv();
    });
  }

  Status MaxAcrossRanks(std::span<double> values) override {
    return Guarded("gloo::allreduce(max)", [&] {
      gloo::AllreduceOptions options(context_);
      options.setOutput(values.data(), values.size());
      options.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
      gloo::allreduce(options);
    });
  }

 private:
  // Gloo's collectives build their slots from their own prefixes, which never
  // reach this value.
  static constexpr uint64_t kPointToPointSlot = 0x7000;

  std::shared_ptr<gloo::Context> context_;
};

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) {
  inferno::StoreDriverArgs args;
  if (auto exit_status = inferno::ParseStoreDriverArgs("gloo_bench", argc, argv, args)) {
    return *exit_status;
  }
  auto backend = inferno::GlooBackend::Connect(args.rank, args.world_size, args.store_dir);
  if (!backend) {
    std::fprintf(stderr, "gloo_bench: rank %d: %s\n", args.rank, backend.error().ToString().c_str());
    return 1;
  }
  return inferno::RunCollectiveBenchMain("gloo_bench", **backend, args.config);
}
