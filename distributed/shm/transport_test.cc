#include "distributed/shm/transport.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "distributed/process_group.h"
#include "distributed/testing/dev_shm_entries.h"
#include "distributed/testing/rank_threads.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Small rings, so that most messages stream through in pieces.
constexpr size_t kRingCapacity = size_t{1} << 16;

// Reads one line from `fd` by `deadline`; "" on end of file or timeout.
std::string ReadLine(int fd, Deadline deadline) {
  std::string line;
  char c = 0;
  while (Clock::now() < deadline) {
    pollfd readable{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (poll(&readable, 1, static_cast<int>(std::max<int64_t>(left, 1))) <= 0) continue;
    if (read(fd, &c, 1) != 1) return "";
    if (c == '\n') return line;
    line += c;
  }
  return "";
}

void WriteAll(int fd, const std::string& text) {
  CHECK_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
}

// The send path of a flake in the 4-rank shared-memory rank_fault case (cut
// from CI on 6 December; tests/BUILD): a rank sending to
// a peer that gave up on the job reported that the peer closed its end of
// the ring, not why the job ended, and so did not name the victim.
TEST(ShmTransport, SendToARankThatGaveUpQuotesItsReason) {
  std::vector<std::shared_ptr<Transport>> transports = MakeTransports(TransportKind::kShm, 2, seconds(10));
  transports[1]->Abort("rank 1: Timeout: recv from rank 5");
  const std::string bytes = "x";
  const Status sent =
      transports[0]->Send(1, FrameKey{7}, std::as_bytes(std::span(bytes)), Clock::now() + seconds(10));
  ASSERT_FALSE(sent);
  EXPECT_EQ(sent.error().kind, ErrorKind::kPeerLost);
  EXPECT_NE(sent.error().message.find("(rank 1 gave up on the job: rank 1: Timeout: recv from rank 5)"),
            std::string::npos)
      << sent.error().message;
}

// A send that fits the ring never waits; it must still fail once a third
// rank gave up on the job, naming that rank, as a receive would.
TEST(ShmTransport, SendFailsAtOnceOnceAnotherRankGaveUpOnTheJob) {
  std::vector<std::shared_ptr<Transport>> transports = MakeTransports(TransportKind::kShm, 3, seconds(10));
  const std::string bytes = "x";
  ASSERT_TRUE(
      transports[0]->Send(1, FrameKey{7}, std::as_bytes(std::span(bytes)), Clock::now() + seconds(10)));
  transports[2]->Abort("rank 2: Timeout: recv from rank 5");
  const Status sent =
      transports[0]->Send(1, FrameKey{7}, std::as_bytes(std::span(bytes)), Clock::now() + seconds(10));
  ASSERT_FALSE(sent);
  EXPECT_EQ(sent.error().kind, ErrorKind::kPeerLost);
  EXPECT_NE(sent.error().message.find("rank 2 gave up on the job: rank 2: Timeout: recv from rank 5"),
            std::string::npos)
      << sent.error().message;
}

// A rank's body: runs on its ProcessGroup and returns its exit code.
using RankBody = std::function<int(ProcessGroup& group, int report_fd)>;

// A job of `world_size` real processes, each with a ShmTransport; the parent
// passes the inbox addresses around as a rendezvous would.
class ProcessJob {
 public:
  ProcessJob(int world_size, std::chrono::milliseconds timeout, const RankBody& body) {
    for (int rank = 0; rank < world_size; ++rank) {
      int up[2], down[2];
      CHECK_EQ(pipe(up), 0);
      CHECK_EQ(pipe(down), 0);
      const pid_t pid = fork();
      CHECK_GE(pid, 0);
      if (pid == 0) {
        close(up[0]);
        close(down[1]);
        _exit(RunRank(rank, world_size, timeout, up[1], down[0], body));
      }
      close(up[1]);
      close(down[0]);
      pids_.push_back(pid);
      from_child_.push_back(up[0]);
      to_child_.push_back(down[1]);
    }
    const Deadline deadline = Clock::now() + seconds(30);
    std::string table;
    for (int rank = 0; rank < world_size; ++rank) table += ReadLine(from_child_[rank], deadline) + "\n";
    for (int rank = 0; rank < world_size; ++rank) WriteAll(to_child_[rank], table);
  }

  ~ProcessJob() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (size_t rank = 0; rank < pids_.size(); ++rank) {
      ExitStatus(static_cast<int>(rank));
      close(from_child_[rank]);
      close(to_child_[rank]);
    }
  }

  pid_t pid(int rank) const { return pids_[rank]; }
  // A line the rank's body wrote to its report descriptor.
  std::string ReportOf(int rank) { return ReadLine(from_child_[rank], Clock::now() + seconds(30)); }

  // The rank's waitpid status; kills it first if it has not exited within 30 s.
  int ExitStatus(int rank) {
    if (auto reaped = statuses_.find(rank); reaped != statuses_.end()) return reaped->second;
    const Deadline deadline = Clock::now() + seconds(30);
    int status = 0;
    while (waitpid(pids_[rank], &status, WNOHANG) == 0) {
      if (Clock::now() >= deadline) {
        kill(pids_[rank], SIGKILL);
        waitpid(pids_[rank], &status, 0);
        break;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    statuses_[rank] = status;
    return status;
  }

 private:
  static int RunRank(int rank, int world_size, std::chrono::milliseconds timeout, int up, int down,
                     const RankBody& body) {
    ShmTransportOptions options;
    options.rank = rank;
    options.world_size = world_size;
    options.timeout = timeout;
    options.ring_capacity = kRingCapacity;
    Result<std::shared_ptr<ShmTransport>> transport = ShmTransport::Create(options);
    if (!transport) return 10;
    WriteAll(up, (*transport)->inbox().ToString() + "\n");
    const Deadline deadline = Clock::now() + seconds(30);
    std::vector<std::optional<SegmentAddress>> inboxes;
    for (int peer = 0; peer < world_size; ++peer) {
      Result<SegmentAddress> address = SegmentAddress::Parse(ReadLine(down, deadline));
      if (!address) return 11;
      inboxes.push_back(*address);
    }
    Status connected = (*transport)->Connect(inboxes, deadline);
    if (!connected) {
      LOG(ERROR) << "rank " << rank << ": " << connected.error().ToString();
      return 12;
    }
    ProcessGroup group(*transport);
    const int code = body(group, up);
    (*transport)->Close();
    return code;
  }

  std::vector<pid_t> pids_;
  std::vector<int> from_child_;
  std::vector<int> to_child_;
  std::map<int, int> statuses_;
};

bool ExitedWith(int status, int code) { return WIFEXITED(status) && WEXITSTATUS(status) == code; }

// Element i of rank r's input: small integers, so sums are exact.
float InputValue(int rank, size_t i) { return static_cast<float>((rank + 1) * 3 + i % 17); }

// Runs all_reduce (sum, max), all_gather, broadcast and barrier over lengths
// that fit a ring, fill it, and stream through it many times over.
int CheckCollectives(ProcessGroup& group) {
  const int world = group.world_size();
  for (size_t length : {size_t{1}, size_t{1000}, size_t{16384}, size_t{300000}}) {
    std::vector<float> data(length);
    for (size_t i = 0; i < length; ++i) data[i] = InputValue(group.rank(), i);
    Status summed = group.all_reduce(data, ReduceKind::kSum);
    if (!summed) {
      LOG(ERROR) << summed.error().ToString();
      return 1;
    }
    for (size_t i = 0; i < length; ++i) {
      float want = 0;
      for (int r = 0; r < world; ++r) want += InputValue(r, i);
      if (data[i] != want) return 2;
    }
    std::vector<float> mine(length);
    for (size_t i = 0; i < length; ++i) mine[i] = InputValue(group.rank(), i);
    Result<std::vector<float>> gathered = group.all_gather(mine);
    if (!gathered || gathered->size() != length * world) return 3;
    for (int r = 0; r < world; ++r) {
      for (size_t i = 0; i < length; ++i) {
        if ((*gathered)[r * length + i] != InputValue(r, i)) return 4;
      }
    }
    std::vector<float> broadcast(length, group.rank() == world - 1 ? 5.0f : 0.0f);
    if (!group.broadcast(world - 1, broadcast)) return 5;
    for (float value : broadcast) {
      if (value != 5.0f) return 6;
    }
    if (!group.barrier()) return 7;
  }
  return 0;
}

class ShmTransportProcesses : public testing::TestWithParam<int> {};

TEST_P(ShmTransportProcesses, CollectivesGiveEveryRankTheRightResultAndLeaveNothingInDevShm) {
  const std::set<std::string> before = DevShmEntries();
  {
    ProcessJob job(GetParam(), milliseconds(20000),
                   [](ProcessGroup& group, int) { return CheckCollectives(group); });
    for (int rank = 0; rank < GetParam(); ++rank) {
      const int status = job.ExitStatus(rank);
      EXPECT_TRUE(ExitedWith(status, 0)) << "rank " << rank << " status " << status;
    }
  }
  EXPECT_EQ(DevShmEntries(), before);
}

INSTANTIATE_TEST_SUITE_P(Worlds, ShmTransportProcesses, testing::Values(2, 3, 4));

// Ranks 0 and 1 run all_reduces until one fails; rank 2 gets the signal in
// the middle. A survivor that fails aborts the job with its error (as infer
// does), so every survivor's error names rank 2, directly or quoted, within
// the timeout plus 2 s of the signal; the job leaves nothing in /dev/shm.
class ShmTransportProcessesFaults : public testing::TestWithParam<int> {};

TEST_P(ShmTransportProcessesFaults, SurvivorsNameTheRankWithinTheTimeoutPlusTwoSeconds) {
  constexpr milliseconds kTimeout{1500};
  const std::set<std::string> before = DevShmEntries();
  {
    ProcessJob job(3, kTimeout, [](ProcessGroup& group, int report) {
      std::vector<float> data(100000, 1.0f);
      for (int round = 0;; ++round) {
        if (round == 3) WriteAll(report, "running\n");
        Status reduced = group.all_reduce(data, ReduceKind::kMax);
        if (!reduced) {
          const Error& error = reduced.error();
          LOG(INFO) << "rank " << group.rank() << ": " << error.ToString();
          group.transport()->Abort("rank " + std::to_string(group.rank()) + ": " + error.ToString());
          const bool named = error.message.find("rank 2") != std::string::npos;
          return (error.kind == ErrorKind::kPeerLost || error.kind == ErrorKind::kTimeout) && named ? 0 : 1;
        }
      }
    });
    for (int rank = 0; rank < 3; ++rank) ASSERT_EQ(job.ReportOf(rank), "running") << "rank " << rank;
    const Deadline signalled = Clock::now();
    kill(job.pid(2), GetParam());
    for (int rank = 0; rank < 2; ++rank) {
      const int status = job.ExitStatus(rank);
      EXPECT_TRUE(ExitedWith(status, 0)) << "rank " << rank << " status " << status;
      EXPECT_LT(Clock::now() - signalled, kTimeout + seconds(2)) << "rank " << rank;
    }
    kill(job.pid(2), SIGKILL);  // a stopped rank too
    const int killed = job.ExitStatus(2);
    EXPECT_TRUE(WIFSIGNALED(killed) && WTERMSIG(killed) == SIGKILL);
  }
  EXPECT_EQ(DevShmEntries(), before);
}

INSTANTIATE_TEST_SUITE_P(Signals, ShmTransportProcessesFaults, testing::Values(SIGKILL, SIGSTOP),
                         [](const testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGKILL ? "Sigkill" : "Sigstop");
                         });

}  // namespace
}  // namespace inferno
