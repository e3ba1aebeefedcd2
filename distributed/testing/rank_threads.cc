#include "distributed/testing/rank_threads.h"

#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <glog/logging.h>

#include "distributed/inproc/transport.h"
#include "distributed/ipc_directory.h"
#include "distributed/routed/transport.h"
#include "distributed/shm/transport.h"
#include "distributed/testing/zmq_world.h"
#include "distributed/zmq/transport.h"

namespace inferno {
namespace {

std::vector<std::shared_ptr<Transport>> MakeZmqTransports(bool ipc, int world_size,
                                                          std::chrono::milliseconds timeout) {
  ZmqTransportOptions options;
  options.timeout = timeout;
  if (ipc) {
    // The ranks' socket files, in one private directory that goes with the
    // last of the transports.
    Result<IpcDirectory> directory = IpcDirectory::Create();
    CHECK(directory.ok()) << directory.error().ToString();
    options.ipc_directory = std::make_shared<const IpcDirectory>(std::move(*directory));
  }
  std::vector<std::shared_ptr<ZmqTransport>> zmq_transports =
      BindZmqWorld(world_size, options, [&](int rank) -> std::string {
        return ipc ? "ipc://" + options.ipc_directory->path() + "/rank-" + std::to_string(rank)
                   : "tcp://127.0.0.1:0";
      });
  ConnectZmqWorld(zmq_transports, std::random_device()());
  return {zmq_transports.begin(), zmq_transports.end()};
}

// Shared-memory transports between the ranks on the same host, where
// `host[i]` is rank i's; each rank's `also_check(rank)` (may be empty) goes
// into its options. Each connects on its own thread, since Connect waits for
// every peer's hello.
std::vector<std::shared_ptr<ShmTransport>> MakeShmTransports(
    const std::vector<int>& host, std::chrono::milliseconds timeout,
    const std::function<std::function<Status()>(int rank)>& also_check) {
  const int world_size = static_cast<int>(host.size());
  std::vector<std::shared_ptr<ShmTransport>> shm_transports;
  std::vector<SegmentAddress> inboxes;
  for (int rank = 0; rank < world_size; ++rank) {
    ShmTransportOptions options;
    options.rank = rank;
    options.world_size = world_size;
    options.timeout = timeout;
    options.ring_capacity = size_t{1} << 16;
    if (also_check) options.also_check = also_check(rank);
    Result<std::shared_ptr<ShmTransport>> transport = ShmTransport::Create(options);
    CHECK(transport.ok()) << transport.error().ToString();
    inboxes.push_back((*transport)->inbox());
    shm_transports.push_back(*transport);
  }
  const Deadline deadline = Clock::now() + timeout;
  std::vector<std::thread> connecting;
  for (int rank = 0; rank < world_size; ++rank) {
    std::vector<std::optional<SegmentAddress>> same_host(world_size);
    for (int peer = 0; peer < world_size; ++peer) {
      if (host[peer] == host[rank]) same_host[peer] = inboxes[peer];
    }
    connecting.emplace_back([same_host, deadline, transport = shm_transports[rank]] {
      Status connected = transport->Connect(same_host, deadline);
      CHECK(connected.ok()) << connected.error().ToString();
    });
  }
  for (std::thread& thread : connecting) thread.join();
  return shm_transports;
}

// Ranks on two pretend hosts, the first half of the ranks and the rest:
// shared memory within a host, ZeroMQ over tcp:// between them and for
// every rank's control traffic, as the rendezvous routes a job that spans
// hosts.
std::vector<std::shared_ptr<Transport>> MakeMixedTransports(int world_size,
                                                            std::chrono::milliseconds timeout) {
  std::vector<int> host(world_size);
  for (int rank = 0; rank < world_size; ++rank) host[rank] = 2 * rank / world_size;
  std::vector<std::shared_ptr<Transport>> control = MakeZmqTransports(/*ipc=*/false, world_size, timeout);
  std::vector<std::shared_ptr<ShmTransport>> local = MakeShmTransports(host, timeout, [&](int rank) {
    auto zmq = std::static_pointer_cast<ZmqTransport>(control[rank]);
    return [zmq] { return zmq->CheckAbortNotices(); };
  });
  std::vector<std::shared_ptr<Transport>> routed;
  for (int rank = 0; rank < world_size; ++rank) {
    std::vector<bool> local_peers(world_size);
    for (int peer = 0; peer < world_size; ++peer) local_peers[peer] = host[peer] == host[rank];
    routed.push_back(std::make_shared<RoutedTransport>(control[rank], local[rank], local_peers));
  }
  return routed;
}

}  // namespace

std::string TransportKindName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kInProcess:
      return "InProcess";
    case TransportKind::kZmqTcp:
      return "ZmqTcp";
    case TransportKind::kZmqIpc:
      return "ZmqIpc";
    case TransportKind::kShm:
      return "Shm";
    case TransportKind::kMixed:
      return "Mixed";
  }
  return "Unknown";
}

std::vector<std::shared_ptr<Transport>> MakeTransports(TransportKind kind, int world_size,
                                                       std::chrono::milliseconds timeout) {
  switch (kind) {
    case TransportKind::kInProcess: {
      auto world = std::make_shared<InProcessWorld>(world_size, timeout);
      std::vector<std::shared_ptr<Transport>> transports;
      for (int rank = 0; rank < world_size; ++rank) transports.push_back(world->transport(rank));
      return transports;
    }
    case TransportKind::kZmqTcp:
      return MakeZmqTransports(/*ipc=*/false, world_size, timeout);
    case TransportKind::kZmqIpc:
      return MakeZmqTransports(/*ipc=*/true, world_size, timeout);
    case TransportKind::kShm: {
      std::vector<std::shared_ptr<ShmTransport>> shm =
          MakeShmTransports(std::vector<int>(world_size), timeout, {});
      return {shm.begin(), shm.end()};
    }
    case TransportKind::kMixed:
      return MakeMixedTransports(world_size, timeout);
  }
  LOG(FATAL) << "unknown transport kind " << static_cast<int>(kind);
}

}  // namespace inferno
