// soak_bench: a soak test of the ProcessGroup, run under //tools:launch.
// Every rank runs --small-ops small collectives (all_reduce of 64 floats,
// broadcast of 64 floats from a rotating root, all_gather of 16 floats,
// barrier, in turn), then --large-ops all_reduces of --large-bytes, checking
// every result exactly. Each rank prints its resident memory (VmRSS) and open
// file descriptors at the start, middle and end of each phase:
//   soak rank <r> <phase> <start|middle|end> ops <n> vmrss_kib <kib> fds <n> seconds <s>
// Flat figures mean nothing leaks per operation. Exits non-zero on any failed
// call or wrong element, naming the op and its index.
//
//   launch -n 3 -- soak_bench [--small-ops 100000] [--large-ops 1000] [--large-bytes 16777216]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "distributed/process_group.h"
#include "distributed/rendezvous.h"

namespace inferno {
namespace {

using Clock = std::chrono::steady_clock;

// VmRSS of this process in KiB, from /proc/self/status (-1 if unreadable).
long ResidentKib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long value = -1;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> value;
      return value;
    }
    status.ignore(1 << 16, '\n');
  }
  return -1;
}

long OpenFileDescriptors() {
  long count = 0;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++count;
  }
  return count;
}

class SoakReport {
 public:
  SoakReport(int rank, const char* phase) : rank_(rank), phase_(phase), start_(Clock::now()) {}
  void Print(const char* when, long ops) const {
    std::printf("soak rank %d %s %s ops %ld vmrss_kib %ld fds %ld seconds %.2f\n", rank_, phase_, when, ops,
                ResidentKib(), OpenFileDescriptors(),
                std::chrono::duration<double>(Clock::now() - start_).count());
    std::fflush(stdout);
  }

 private:
  int rank_;
  const char* phase_;
  Clock::time_point start_;
};

// Fails naming the op, its index and what went wrong.
std::string Failure(const char* op, long index, const std::string& what) {
  return std::string(op) + " #" + std::to_string(index) + ": " + what;
}

// One small collective, chosen by `index`; "" on success.
std::string SmallCollective(ProcessGroup& group, long index) {
  const int world = group.world_size(), rank = group.rank();
  const float base = static_cast<float>(index % 1000);
  switch (index % 4) {
    case 0: {
      std::vector<float> data(64);  // (64)
      for (size_t i = 0; i < data.size(); ++i) data[i] = base + static_cast<float>(rank * 64 + i);
      if (Status s = group.all_reduce(data, ReduceKind::kSum); !s)
        return Failure("all_reduce", index, s.error().ToString());
      for (size_t i = 0; i < data.size(); ++i) {
        const float want =
            static_cast<float>(world) * (base + static_cast<float>(i)) + 64.0f * world * (world - 1) / 2;
        if (data[i] != want)
          return Failure("all_reduce", index,
                         "element " + std::to_string(i) + " is " + std::to_string(data[i]));
      }
      return "";
    }
    case 1: {
      const int root = static_cast<int>(index / 4 % world);
      std::vector<float> data(64, rank == root ? base + static_cast<float>(root) : -1.0f);  // (64)
      if (Status s = group.broadcast(root, data); !s)
        return Failure("broadcast", index, s.error().ToString());
      for (float value : data) {
        if (value != base + static_cast<float>(root))
          return Failure("broadcast", index, "got " + std::to_string(value));
      }
      return "";
    }
    case 2: {
      const std::vector<float> mine(16, base + static_cast<float>(rank));  // (16)
      Result<std::vector<float>> all = group.all_gather(mine);             // (world * 16)
      if (!all) return Failure("all_gather", index, all.error().ToString());
      if (all->size() != 16u * world)
        return Failure("all_gather", index, "length " + std::to_string(all->size()));
      for (size_t i = 0; i < all->size(); ++i) {
        if ((*all)[i] != base + static_cast<float>(i / 16))
          return Failure("all_gather", index, "element " + std::to_string(i));
      }
      return "";
    }
    default:
      if (Status s = group.barrier(); !s) return Failure("barrier", index, s.error().ToString());
      return "";
  }
}

// One large all_reduce of `floats` elements; "" on success.
std::string LargeAllReduce(ProcessGroup& group, long index, std::vector<float>& data) {
  const int world = group.world_size(), rank = group.rank();
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 7 + rank + index % 3);
  if (Status s = group.all_reduce(data, ReduceKind::kSum); !s)
    return Failure("all_reduce", index, s.error().ToString());
  for (size_t i = 0; i < data.size(); ++i) {
    const float want =
        static_cast<float>(world * static_cast<long>(i % 7 + index % 3) + world * (world - 1) / 2);
    if (data[i] != want)
      return Failure("all_reduce", index, "element " + std::to_string(i) + " is " + std::to_string(data[i]));
  }
  return "";
}

int Run(int argc, char** argv) {
  const CommandSpec spec{"soak_bench",
                         "[--small-ops N] [--large-ops N] [--large-bytes B]",
                         "Runs many small collectives, then many large all_reduces, printing RSS and timing\n"
                         "at the start, middle and end of each phase (run under launch; see tools/soak.sh).",
                         {{"small-ops", "N", "small collectives to run (default 100000)"},
                          {"large-ops", "N", "large all_reduces to run (default 1000)"},
                          {"large-bytes", "B", "bytes per large all_reduce (default 16 MiB)"}}};
  const CommandLine flags = ParseCommandLineOrExit(argc, argv, spec);
  Result<int64_t> small_ops = flags.Int("small-ops", 100000, 0, 1L << 40);
  Result<int64_t> large_ops = flags.Int("large-ops", 1000, 0, 1L << 40);
  Result<int64_t> large_bytes = flags.Int("large-bytes", 16L << 20, 4, 1L << 32);
  for (const auto* value : {&small_ops, &large_ops, &large_bytes}) {
    if (!*value) {
      std::fprintf(stderr, "soak_bench: %s\n", value->error().message.c_str());
      return 2;
    }
  }
  Result<ProcessGroup> group = JoinFromEnvironment();
  if (!group) {
    std::fprintf(stderr, "soak_bench: joining the process group: %s\n", group.error().ToString().c_str());
    return 1;
  }
  const int rank = group->rank();

  SoakReport small(rank, "small");
  small.Print("start", 0);
  for (long i = 0; i < *small_ops; ++i) {
    if (i == *small_ops / 2) small.Print("middle", i);
    if (std::string failure = SmallCollective(*group, i); !failure.empty()) {
      std::fprintf(stderr, "soak_bench: rank %d: %s\n", rank, failure.c_str());
      return 1;
    }
  }
  small.Print("end", *small_ops);

  std::vector<float> data(static_cast<size_t>(*large_bytes / 4));  // (large_bytes / 4)
  SoakReport large(rank, "large");
  large.Print("start", 0);
  for (long i = 0; i < *large_ops; ++i) {
    if (i == *large_ops / 2) large.Print("middle", i);
    if (std::string failure = LargeAllReduce(*group, i, data); !failure.empty()) {
      std::fprintf(stderr, "soak_bench: rank %d: %s\n", rank, failure.c_str());
      return 1;
    }
  }
  large.Print("end", *large_ops);
  return 0;
}

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) { return inferno::Run(argc, argv); }
