// ShardProgressDisplay: the sharding job's progress on stderr — one line
// redrawn in place when stderr is a terminal, plain log lines every few
// seconds otherwise — with bytes done and total, rate and ETA.
//
// Thread-safety: one object must not be used from several threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace inferno {

// "1.50 GiB / 3.00 GiB (50%), 750.0 MiB/s, ETA 2s".
std::string FormatShardProgress(uint64_t bytes_done, uint64_t bytes_total, double elapsed_seconds);

class ShardProgressDisplay {
 public:
  // Draws on `out`; `terminal` chooses in-place redraws over log lines.
  ShardProgressDisplay(std::FILE* out, bool terminal);

  // Reports progress; draws at most every 100 ms (terminal) or 2 s (log).
  void Update(uint64_t bytes_done, uint64_t bytes_total);
  // Draws the final state and ends the line.
  void Finish(uint64_t bytes_done, uint64_t bytes_total);

 private:
  void Draw(uint64_t bytes_done, uint64_t bytes_total);

  std::FILE* out_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace inferno
