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

#include "distributed/zmq/transport.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

constexpr int kWorld = 3;
constexpr int kRounds = 60;
constexpr milliseconds kCloseBound{5000};

std::vector<std::shared_ptr<ZmqTransport>> ConnectedWorld() {
  std::vector<std::shared_ptr<ZmqTransport>> transports;
  std::vector<std::string> endpoints;
  for (int rank = 0; rank < kWorld; ++rank) {
    ZmqTransportOptions options;
    options.rank = rank;
    options.world_size = kWorld;
    options.linger = milliseconds(200);
    Result<std::shared_ptr<ZmqTransport>> bound = ZmqTransport::Bind(options);
    EXPECT_TRUE(bound.ok()) << bound.error().ToString();
    if (!bound) return {};
    endpoints.push_back((*bound)->endpoints().front());
    transports.push_back(*bound);
  }
  for (auto& transport : transports) {
    Status connected = transport->Connect(endpoints, 0x5EED);
    EXPECT_TRUE(connected.ok()) << connected.error().ToString();
  }
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
        std::fprintf(stderr, "FAIL: rank %d's Close did not return within %lld ms (round %d)\n",
                     rank, static_cast<long long>(kCloseBound.count()), round);
        std::fflush(stderr);
        _exit(1);
      }
    }
  }
}

}  // namespace
}  // namespace inferno
