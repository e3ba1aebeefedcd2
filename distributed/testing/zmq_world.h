// Test support: a world of real ZmqTransports in one process, bound and
// connected the way a rendezvous would, for tests that need ZeroMQ-specific
// options (a job secret, a short linger) or ranks left unconnected.
//
//   ZmqTransportOptions options;            // rank and world_size are set here
//   options.timeout = milliseconds(5000);
//   auto transports = BindZmqWorld(3, options);
//   ConnectZmqWorld(transports, /*job_id=*/7);
//
// Setup failures CHECK-fail: they mean a broken test machine, not a result.
// Thread-safety: call from the test's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distributed/zmq/transport.h"

namespace inferno {

// Binds one transport per rank of a world of `world_size`, each with
// `options` but its own rank, world size and bind endpoint
// (`endpoint(rank)`; by default a free tcp port on loopback).
std::vector<std::shared_ptr<ZmqTransport>> BindZmqWorld(
    int world_size, ZmqTransportOptions options, const std::function<std::string(int rank)>& endpoint = {});

// Connects ranks [0, connected_ranks) of `transports` (all when negative) to
// every bound endpoint under `job_id`.
void ConnectZmqWorld(const std::vector<std::shared_ptr<ZmqTransport>>& transports, uint64_t job_id,
                     int connected_ranks = -1);

}  // namespace inferno
