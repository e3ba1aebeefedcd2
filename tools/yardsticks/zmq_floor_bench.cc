// zmq_floor_bench: the collective benchmark protocol (bench/bench_protocol.h)
// over bare libzmq, a yardstick for //tools:collective_bench: one PAIR socket
// per pair of ranks over tcp://127.0.0.1, blocking zmq_send/zmq_recv, no frame
// header, no mailbox, no chunking. Every collective is a direct all-to-all
// exchange (every rank sends its buffer to every other rank), which for two
// ranks is what our recursive doubling does. It shows what ZeroMQ's own
// I/O-thread hand-offs cost on this machine, the floor under any transport
// built on it. Not a product dependency. Run under //tools:launch; ranks meet
// through files in an empty directory. Like ZmqTransport, it keeps freed
// blocks up to 32 MiB on the heap (mallopt), so that large messages are not
// measured with fresh page faults:
//
//   launch -n 2 -- zmq_floor_bench --store "$(mktemp -d)" [--ops LIST] [--sizes LIST] [--iters N]
#include <malloc.h>
#include <zmq.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_runner.h"

namespace inferno {
namespace {

constexpr std::chrono::seconds kConnectTimeout{60};

std::string ZmqErrorText(const std::string& what) { return what + ": " + zmq_strerror(zmq_errno()); }

class ZmqFloorBackend : public CollectiveBenchBackend {
 public:
  ZmqFloorBackend(int rank, int world_size)
      : rank_(rank), world_size_(world_size), context_(zmq_ctx_new()), pairs_(world_size) {}

  ~ZmqFloorBackend() override {
    for (void* pair : pairs_) {
      if (pair != nullptr) zmq_close(pair);
    }
    zmq_ctx_term(context_);
  }

  // Opens one PAIR socket per peer: the lower rank binds port 0 and publishes
  // the endpoint as the file "<lower>-<higher>" in `store_dir`; the higher
  // rank waits for it (up to kConnectTimeout) and connects.
  Status Connect(const std::string& store_dir) {
    const int linger = 0;
    for (int peer = 0; peer < world_size_; ++peer) {
      if (peer == rank_) continue;
      void* pair = zmq_socket(context_, ZMQ_PAIR);
      if (pair == nullptr) return Error::Transport(ZmqErrorText("zmq_socket"));
      pairs_[peer] = pair;
      zmq_setsockopt(pair, ZMQ_LINGER, &linger, sizeof(linger));
      const int low = std::min(rank_, peer);
      const std::string file =
          store_dir + "/" + std::to_string(low) + "-" + std::to_string(std::max(rank_, peer));
      if (rank_ == low) {
        if (zmq_bind(pair, "tcp://127.0.0.1:0") != 0) return Error::Transport(ZmqErrorText("bind"));
        char endpoint[256];
        size_t length = sizeof(endpoint);
        zmq_getsockopt(pair, ZMQ_LAST_ENDPOINT, endpoint, &length);
        std::ofstream(file + ".tmp") << endpoint;
        if (std::rename((file + ".tmp").c_str(), file.c_str()) != 0) {
          return Error::Io("cannot publish " + file);
        }
        continue;
      }
      const auto give_up = std::chrono::steady_clock::now() + kConnectTimeout;
      std::string endpoint;
      while (!(std::ifstream(file) >> endpoint)) {
        if (std::chrono::steady_clock::now() > give_up) {
          return Error::Transport("rank " + std::to_string(peer) + " never published " + file);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (zmq_connect(pair, endpoint.c_str()) != 0) {
        return Error::Transport(ZmqErrorText("connect " + endpoint));
      }
    }
    return {};
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  Status Barrier() override {
    std::vector<float> none;
    return Exchange(none, [](int, std::span<const float>) {});
  }

  Status AllReduceSum(std::span<float> data) override {
    std::vector<float> mine(data.begin(), data.end());  // (n) sent before any sum
    return Exchange(mine, [&](int, std::span<const float> theirs) {
      for (size_t i = 0; i < data.size(); ++i) data[i] += theirs[i];
    });
  }

  Status AllGather(std::span<const float> input, std::vector<float>& out) override {
    out.resize(input.size() * world_size_);  // (world_size × n)
    std::copy(input.begin(), input.end(), out.begin() + rank_ * input.size());
    return Exchange(input, [&](int peer, std::span<const float> theirs) {
      std::copy(theirs.begin(), theirs.end(), out.begin() + peer * input.size());
    });
  }

  Status BroadcastFromRank0(std::span<float> data) override {
    if (rank_ != 0) return ReceiveInto(0, data);
    for (int peer = 1; peer < world_size_; ++peer) {
      if (Status sent = Send(peer, data); !sent) return sent;
    }
    return {};
  }

  Status Send(int peer, std::span<const float> data) override {
    if (zmq_send(pairs_[peer], data.data(), data.size_bytes(), 0) < 0) {
      return Error::Transport(ZmqErrorText("send to rank " + std::to_string(peer)));
    }
    return {};
  }

  Status Recv(int peer, std::vector<float>& out) override { return ReceiveInto(peer, out); }

  Status MaxAcrossRanks(std::span<double> values) override {
    std::vector<float> mine(values.begin(), values.end());  // (n)
    return Exchange(mine, [&](int, std::span<const float> theirs) {
      for (size_t i = 0; i < values.size(); ++i) {
        values[i] = std::max(values[i], static_cast<double>(theirs[i]));
      }
    });
  }

 private:
  // Receives the next message from `peer`, which must hold exactly `out.size()` floats.
  Status ReceiveInto(int peer, std::span<float> out) {
    zmq_msg_t message;
    zmq_msg_init(&message);
    const int received = zmq_msg_recv(&message, pairs_[peer], 0);
    Status status;
    if (received < 0) {
      status = Error::Transport(ZmqErrorText("recv from rank " + std::to_string(peer)));
    } else if (static_cast<size_t>(received) != out.size_bytes()) {
      status = Error::Transport("recv from rank " + std::to_string(peer) + ": " + std::to_string(received) +
                                " bytes, expected " + std::to_string(out.size_bytes()));
    } else if (received > 0) {
      std::memcpy(out.data(), zmq_msg_data(&message), out.size_bytes());
    }
    zmq_msg_close(&message);
    return status;
  }

  // Sends `mine` to every peer, then receives each peer's buffer (of the
  // same length) and hands it to `combine(peer, theirs)`.
  template <typename Combine>
  Status Exchange(std::span<const float> mine, Combine combine) {
    for (int peer = 0; peer < world_size_; ++peer) {
      if (peer == rank_) continue;
      if (Status sent = Send(peer, mine); !sent) return sent;
    }
    std::vector<float> theirs(mine.size());  // (n)
    for (int peer = 0; peer < world_size_; ++peer) {
      if (peer == rank_) continue;
      if (Status received = ReceiveInto(peer, theirs); !received) return received;
      combine(peer, theirs);
    }
    return {};
  }

  const int rank_;
  const int world_size_;
  void* const context_;
  std::vector<void*> pairs_;  // by peer rank; null for this rank
};

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) {
  inferno::StoreDriverArgs args;
  if (auto exit_status = inferno::ParseStoreDriverArgs("zmq_floor_bench", argc, argv, args)) {
    return *exit_status;
  }
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  inferno::ZmqFloorBackend backend(args.rank, args.world_size);
  if (auto connected = backend.Connect(args.store_dir); !connected) {
    std::fprintf(stderr, "zmq_floor_bench: rank %d: %s\n", args.rank, connected.error().ToString().c_str());
    return 1;
  }
  return inferno::RunCollectiveBenchMain("zmq_floor_bench", backend, args.config);
}
