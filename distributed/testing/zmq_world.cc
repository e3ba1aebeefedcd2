#include "distributed/testing/zmq_world.h"

#include <glog/logging.h>

namespace inferno {

std::vector<std::shared_ptr<ZmqTransport>> BindZmqWorld(
    int world_size, ZmqTransportOptions options, const std::function<std::string(int rank)>& endpoint) {
  std::vector<std::shared_ptr<ZmqTransport>> transports;
  for (int rank = 0; rank < world_size; ++rank) {
    options.rank = rank;
    options.world_size = world_size;
    options.bind_endpoints = {endpoint ? endpoint(rank) : "tcp://127.0.0.1:0"};
    Result<std::shared_ptr<ZmqTransport>> bound = ZmqTransport::Bind(options);
    CHECK(bound.ok()) << bound.error().ToString();
    transports.push_back(*bound);
  }
  return transports;
}

void ConnectZmqWorld(const std::vector<std::shared_ptr<ZmqTransport>>& transports, uint64_t job_id,
                     int connected_ranks) {
  std::vector<std::string> endpoints;
  for (const auto& transport : transports) endpoints.push_back(transport->endpoints().front());
  const int ranks = connected_ranks < 0 ? static_cast<int>(transports.size()) : connected_ranks;
  for (int rank = 0; rank < ranks; ++rank) {
    Status connected = transports[rank]->Connect(endpoints, job_id);
    CHECK(connected.ok()) << connected.error().ToString();
  }
}

}  // namespace inferno
