// Test support: builds one connected Transport per rank (in-process or real
// ZeroMQ over tcp:// or ipc://, shared memory, or a mix: shared memory
// between some ranks, ZeroMQ between the others), for RunRanks (distributed/run_ranks.h, which
// this header brings along) to run every rank's body on its own thread.
//
// Thread-safety: MakeTransports is called from one test thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "distributed/run_ranks.h"
#include "distributed/transport.h"

namespace inferno {

// kMixed: ranks on two pretend hosts (the first half of the ranks, the rest),
// shared memory within a host and ZeroMQ between them, joined by
// RoutedTransport as the rendezvous does for a job that spans hosts.
enum class TransportKind { kInProcess, kZmqTcp, kZmqIpc, kShm, kMixed };

// "InProcess", "ZmqTcp", "ZmqIpc", "Shm", "Mixed" (usable in gtest parameter
// names).
std::string TransportKindName(TransportKind kind);

// One transport per rank, all connected; rank i's transport is element i.
// CHECK-fails if the transports cannot be set up (a broken test machine).
std::vector<std::shared_ptr<Transport>> MakeTransports(TransportKind kind, int world_size,
                                                       std::chrono::milliseconds timeout);

}  // namespace inferno
