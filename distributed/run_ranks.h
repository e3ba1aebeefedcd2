// RunRanks: runs every rank of a world as a thread of this process — the way
// tests (and single-process tools) drive a ProcessGroup per rank — and
// collects each rank's result, so callers check them after every thread
// has joined.
//
// Thread-safety: call RunRanks from one thread; the bodies run concurrently
// and must only share thread-safe state.
#pragma once

#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "distributed/process_group.h"
#include "distributed/transport.h"

namespace inferno {

// Runs `body(group)` for every rank on its own thread, where group is a
// ProcessGroup over that rank's transport (`transports[i]` is rank i's, all
// of one world), and returns the results in rank order once every thread
// has joined.
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
