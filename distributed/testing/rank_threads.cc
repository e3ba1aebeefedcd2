#include "distributed/testing/rank_threads.h"

#include <glog/logging.h>

#include "distributed/inproc/transport.h"

namespace inferno {

std::string TransportKindName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kInProcess:
      return "InProcess";
    case TransportKind::kZmqTcp:
      return "ZmqTcp";
    case TransportKind::kZmqIpc:
      return "ZmqIpc";
  }
  return "Unknown";
}

std::vector<std::shared_ptr<Transport>> MakeTransports(TransportKind kind, int world_size,
                                                       std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<Transport>> transports;
  switch (kind) {
    case TransportKind::kInProcess: {
      auto world = std::make_shared<InProcessWorld>(world_size, timeout);
      for (int rank = 0; rank < world_size; ++rank) transports.push_back(world->transport(rank));
      return transports;
    }
    case TransportKind::kZmqTcp:
    case TransportKind::kZmqIpc:
      LOG(FATAL) << "ZeroMQ transports are not built yet";
  }
  return transports;
}

}  // namespace inferno
