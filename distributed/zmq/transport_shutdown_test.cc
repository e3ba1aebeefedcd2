// Shutdown of ZmqTransport always completes, also when every rank closes at
// once and peers' disconnections race with the closing of this rank's
// connection monitors (as at the end of every multi-process job).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/testing/zmq_world.h"
#include "distributed/zmq/transport.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

constexpr int kWorld = 3;
constexpr int kRounds = 60;
constexpr milliseconds kCloseBound{5000};

std::vector<std::shared_ptr<ZmqTransport>> ConnectedWorld() {
  ZmqTransportOptions options;
  options.linger = milliseconds(200);
  std::vector<std::shared_ptr<ZmqTransport>> transports = BindZmqWorld(kWorld, options);
  ConnectZmqWorld(transports, 0x5EED);
  return transports;
}

TEST(ZmqTransport, CloseCompletesWhenEveryRankClosesAtOnce) {
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::shared_ptr<ZmqTransport>> transports = ConnectedWorld();
    ASSERT_EQ(transports.size(), static_cast<size_t>(kWorld));
    // Let the connections come up, so closing one disconnects its peers.
    std::this_thread::sleep_for(milliseconds(20 + round % 7));
    std::vector<std::future<void>> closes;
    for (auto& transport : transports) {
      closes.push_back(std::async(std::launch::async, [transport] { transport->Close(); }));
    }
    for (int rank = 0; rank < kWorld; ++rank) {
      if (closes[rank].wait_for(kCloseBound) != std::future_status::ready) {
        // The closing thread is stuck inside libzmq and cannot be joined.
        std::fprintf(stderr, "FAIL: rank %d's Close did not return within %lld ms (round %d)\n", rank,
                     static_cast<long long>(kCloseBound.count()), round);
        std::fflush(stderr);
        _exit(1);
      }
    }
  }
}

}  // namespace
}  // namespace inferno
