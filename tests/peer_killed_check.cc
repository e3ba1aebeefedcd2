// peer_killed_check: one rank of the peer-loss test. Run under //tools:launch.
// Every rank joins over TCP and runs all_reduce on a large buffer in a loop;
// rank --victim kills itself with SIGKILL --kill-after-ms after joining, while
// inside an all_reduce. The other ranks must see the loss as an error value
// (PeerLost or Timeout) within the group's timeout (INFERNO_TIMEOUT_MS), not
// hang and not crash.
//
// Output (one line each, for the test script to check):
//   "pid <pid>"                                  every rank, after joining
//   "killing myself at <epoch_ms>"               the victim, just before SIGKILL
//   "detected at <epoch_ms> after <n> all_reduces: <Kind>: <message>"  survivors
// Exit status: 3 when a survivor got PeerLost or Timeout, 4 for any other
// error, 5 if the victim was still alive after --give-up-ms; 1 on a bad flag.
//
// Survivors ignore SIGTERM: the launcher sends it as soon as the victim dies,
// and the test is about what the survivors' group reports, not about launch.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "distributed/process_group.h"
#include "distributed/rendezvous.h"

namespace {

int64_t EpochMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Value of --name N in argv, or `fallback`.
long FlagOr(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::strtol(argv[i + 1], nullptr, 10);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace inferno;
  const long victim = FlagOr(argc, argv, "--victim", -1);
  const long kill_after_ms = FlagOr(argc, argv, "--kill-after-ms", 500);
  const long give_up_ms = FlagOr(argc, argv, "--give-up-ms", 60000);
  const long length = FlagOr(argc, argv, "--length", 1 << 22);
  if (victim < 0 || kill_after_ms < 0 || give_up_ms <= 0 || length <= 0) {
    std::fprintf(stderr,
                 "peer_killed_check: need --victim RANK [--kill-after-ms MS] "
                 "[--give-up-ms MS] [--length FLOATS]\n");
    return 1;
  }
  std::signal(SIGTERM, SIG_IGN);

  RendezvousOptions options;
  options.prefer_ipc_on_same_host = false;
  auto joined = JoinFromEnvironment(options);
  if (!joined) {
    std::printf("rendezvous failed: %s\n", joined.error().ToString().c_str());
    return 4;
  }
  ProcessGroup group = *std::move(joined);
  std::printf("pid %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);

  if (group.rank() == victim) {
    std::thread([kill_after_ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms));
      std::printf("killing myself at %lld\n", static_cast<long long>(EpochMs()));
      std::fflush(stdout);
      raise(SIGKILL);
    }).detach();
  }

  std::vector<float> data(static_cast<size_t>(length));  // (length)
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(give_up_ms);
  for (long done = 0; std::chrono::steady_clock::now() < give_up; ++done) {
    std::fill(data.begin(), data.end(), 1.0f);
    const Status status = group.all_reduce(data, ReduceKind::kSum);
    if (!status) {
      const ErrorKind kind = status.error().kind;
      std::printf("detected at %lld after %ld all_reduces: %s\n", static_cast<long long>(EpochMs()), done,
                  status.error().ToString().c_str());
      std::fflush(stdout);
      return kind == ErrorKind::kPeerLost || kind == ErrorKind::kTimeout ? 3 : 4;
    }
    if (data.front() != static_cast<float>(group.world_size())) {
      std::printf("all_reduce #%ld gave %g, expected %d\n", done, static_cast<double>(data.front()),
                  group.world_size());
      return 4;
    }
  }
  std::printf("still running after %ld ms; the victim never died\n", give_up_ms);
  return 5;
}
