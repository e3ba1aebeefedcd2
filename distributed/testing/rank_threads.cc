#include "distributed/testing/rank_threads.h"

#include <stdlib.h>

#include <cstdlib>
#include <random>
#include <string>
#include <thread>

#include <glog/logging.h>

#include "distributed/inproc/transport.h"
#include "distributed/shm/transport.h"
#include "distributed/testing/zmq_world.h"
#include "distributed/zmq/transport.h"

namespace inferno {
namespace {

// A fresh directory for ipc:// sockets. ipc paths are limited to ~100
// characters, so Bazel's (long) TEST_TMPDIR is used only when short enough.
std::string MakeSocketDirectory() {
  const char* test_tmpdir = std::getenv("TEST_TMPDIR");
  std::string base = test_tmpdir != nullptr && std::string(test_tmpdir).size() < 60 ? std::string(test_tmpdir)
                                                                                    : std::string("/tmp");
  std::string pattern = base + "/ipc-XXXXXX";
  CHECK(mkdtemp(pattern.data()) != nullptr) << "mkdtemp " << pattern;
  return pattern;
}

std::vector<std::shared_ptr<Transport>> MakeZmqTransports(bool ipc, int world_size,
                                                          std::chrono::milliseconds timeout) {
  const std::string directory = ipc ? MakeSocketDirectory() : "";
  ZmqTransportOptions options;
  options.timeout = timeout;
  std::vector<std::shared_ptr<ZmqTransport>> zmq_transports =
      BindZmqWorld(world_size, options, [&](int rank) -> std::string {
        return ipc ? "ipc://" + directory + "/" + std::to_string(rank) : "tcp://127.0.0.1:0";
      });
  ConnectZmqWorld(zmq_transports, std::random_device()());
  return {zmq_transports.begin(), zmq_transports.end()};
}

// Shared-memory transports; each connects on its own thread, since Connect
// waits for every peer's hello.
std::vector<std::shared_ptr<Transport>> MakeShmTransports(int world_size, std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<ShmTransport>> shm_transports;
  std::vector<SegmentAddress> inboxes;
  for (int rank = 0; rank < world_size; ++rank) {
    ShmTransportOptions options;
    options.rank = rank;
    options.world_size = world_size;
    options.timeout = timeout;
    options.ring_capacity = size_t{1} << 16;
    Result<std::shared_ptr<ShmTransport>> transport = ShmTransport::Create(options);
    CHECK(transport.ok()) << transport.error().ToString();
    inboxes.push_back((*transport)->inbox());
    shm_transports.push_back(*transport);
  }
  const Deadline deadline = Clock::now() + timeout;
  std::vector<std::thread> connecting;
  for (const std::shared_ptr<ShmTransport>& transport : shm_transports) {
    connecting.emplace_back([&inboxes, deadline, transport] {
      Status connected = transport->Connect(inboxes, deadline);
      CHECK(connected.ok()) << connected.error().ToString();
    });
  }
  for (std::thread& thread : connecting) thread.join();
  return {shm_transports.begin(), shm_transports.end()};
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
    case TransportKind::kShm:
      return MakeShmTransports(world_size, timeout);
  }
  LOG(FATAL) << "unknown transport kind " << static_cast<int>(kind);
}

}  // namespace inferno
