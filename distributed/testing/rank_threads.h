// Test support: builds one connected Transport per rank (in-process or real
// ZeroMQ over tcp:// or ipc://) and runs every rank's body on its own thread,
// collecting each rank's result so tests assert after join.
//
// Thread-safety: RunRanks is called from one test thread; the bodies run
// concurrently and must only share thread-safe state.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "distributed/process_group.h"
#include "distributed/transport.h"

namespace inferno {

enum class TransportKind { kInProcess, kZmqTcp, kZmqIpc };

// "InProcess", "ZmqTcp", "ZmqIpc" (usable in gtest parameter names).
std::string TransportKindName(TransportKind kind);

// One transport per rank, all connected; rank i's transport is element i.
// CHECK-fails if the transports cannot be set up (a broken test machine).
std::vector<std::shared_ptr<Transport>> MakeTransports(TransportKind kind, int world_size,
                                                       std::chrono::milliseconds timeout);

// Runs `body(group)` for every rank on its own thread, where group is a
// ProcessGroup over that rank's transport, and returns the results in rank
// order once every thread has joined.
template <typename Body>
auto RunRanks(const std::vector<std::shared_ptr<Transport>>& transports, Body body) {
  using R = decltype(body(std::declval<ProcessGroup&>()));
  std::vector<std::optional<R>> slots(transports.size());
  std::vector<std::thread> threads;
  for (size_t rank = 0; rank < transports.size(); ++rank) {
    threads.emplace_back([&, rank] {
      ProcessGroup group(transports[rank]);
      slots[rank].emplace(body(group));
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<R> results;
  for (auto& slot : slots) results.push_back(std::move(*slot));
  return results;
}

}  // namespace inferno
