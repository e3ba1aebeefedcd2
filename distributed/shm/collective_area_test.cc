#include "distributed/shm/collective_area.h"

#include "distributed/collectives/all_gather.h"
#include "distributed/collectives/all_reduce.h"
#include "distributed/collectives/broadcast.h"
#include "distributed/collectives/reduce_scatter.h"
#include "distributed/testing/dev_shm_entries.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using std::chrono::seconds;

constexpr size_t kChunkElements = kAreaSlotBytes / sizeof(float);

std::string Describe() { return "collective under test"; }

// Creates a group's area as member 0 and opens it as every other member, as
// one process's threads would.
// Job ranks of the members of a test area: 10 + the member, so that a test
// sees which numbering an error uses.
std::vector<int> MemberRanks(int size) {
  std::vector<int> ranks;
  for (int member = 0; member < size; ++member) ranks.push_back(10 + member);
  return ranks;
}

std::vector<std::unique_ptr<CollectiveArea>> OpenedAreas(int size) {
  std::vector<std::unique_ptr<CollectiveArea>> areas;
  Result<std::unique_ptr<CollectiveArea>> created = CollectiveArea::Create(0, size);
  EXPECT_TRUE(created.ok()) << created.error().ToString();
  areas.push_back(std::move(*created));
  for (int rank = 1; rank < size; ++rank) {
    Result<std::unique_ptr<CollectiveArea>> opened = CollectiveArea::Open(areas[0]->address(), rank, size);
    EXPECT_TRUE(opened.ok()) << opened.error().ToString();
    areas.push_back(std::move(*opened));
  }
  areas[0]->StopSharing();
  for (auto& area : areas) EXPECT_TRUE(area->WatchMembers(MemberRanks(size), nullptr).ok());
  return areas;
}

// Runs `body(area, rank)` on one thread per member; returns each's status
// text ("ok" or the error).
std::vector<std::string> RunMembers(std::vector<std::unique_ptr<CollectiveArea>>& areas,
                                    const std::function<Status(CollectiveArea&, int)>& body) {
  std::vector<std::string> results(areas.size());
  std::vector<std::thread> threads;
  for (size_t rank = 0; rank < areas.size(); ++rank) {
    threads.emplace_back([&, rank] {
      Status status = body(*areas[rank], static_cast<int>(rank));
      results[rank] = status ? "ok" : status.error().ToString();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

Status AllReduce(CollectiveArea& area, std::span<float> data, ReduceKind op, uint64_t sequence) {
  return AllReduceInArea(area, data, op, {CollectiveOp::kAllReduce, sequence, data.size()},
                         Clock::now() + seconds(20), Describe);
}

std::vector<float> RandomFloats(int rank, size_t length) {
  std::mt19937 random(1234 + rank);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> data(length);
  for (float& x : data) x = value(random) * (rank % 2 ? 1e-3f : 1e3f);
  return data;
}

TEST(CollectiveArea, AllReduceGivesEveryMemberTheSameBitsAsARankOrderReduction) {
  // Inputs of very different magnitudes, so that another summation order
  // gives other bits; three chunks, each reduced a slice per member, the
  // last one short and not a multiple of the members.
  constexpr int kSize = 3;
  const size_t length = 2 * kChunkElements + kSliceReduceElements + 1;
  std::vector<float> expected = RandomFloats(0, length);
  for (int rank = 1; rank < kSize; ++rank) {
    const std::vector<float> input = RandomFloats(rank, length);
    for (size_t i = 0; i < length; ++i) expected[i] += input[i];
  }
  auto areas = OpenedAreas(kSize);
  std::vector<std::vector<float>> results(kSize);
  auto statuses = RunMembers(areas, [&](CollectiveArea& area, int rank) {
    results[rank] = RandomFloats(rank, length);
    return AllReduce(area, results[rank], ReduceKind::kSum, 0);
  });
  for (int rank = 0; rank < kSize; ++rank) {
    ASSERT_EQ(statuses[rank], "ok");
    EXPECT_EQ(std::memcmp(results[rank].data(), expected.data(), length * sizeof(float)), 0)
        << "rank " << rank;
  }
}

TEST(CollectiveArea, BackToBackAllReducesOfChangingLengthsNeedNoBarrier) {
  constexpr int kSize = 4;
  const size_t lengths[] = {0, 1, 1000, kChunkElements + 1, 3};
  auto areas = OpenedAreas(kSize);
  auto statuses = RunMembers(areas, [&](CollectiveArea& area, int rank) -> Status {
    for (uint64_t sequence = 0; sequence < 40; ++sequence) {
      std::vector<float> data(lengths[sequence % 5], static_cast<float>(rank + sequence));
      if (Status reduced = AllReduce(area, data, ReduceKind::kMax, sequence); !reduced) return reduced;
      for (float value : data) {
        if (value != static_cast<float>(kSize - 1 + sequence)) {
          return Error::Corruption("all_reduce #" + std::to_string(sequence) + " gave " +
                                   std::to_string(value));
        }
      }
    }
    return {};
  });
  for (int rank = 0; rank < kSize; ++rank) EXPECT_EQ(statuses[rank], "ok") << "rank " << rank;
}

Status AllGather(CollectiveArea& area, std::span<const float> data, std::span<float> out, uint64_t sequence) {
  return AllGatherInArea(area, std::as_bytes(data), std::as_writable_bytes(out),
                         {CollectiveOp::kAllGather, sequence, data.size()}, Clock::now() + seconds(20),
                         Describe);
}

Status Broadcast(CollectiveArea& area, std::span<float> data, int root, uint64_t sequence) {
  return BroadcastInArea(area, std::as_writable_bytes(data),
                         {CollectiveOp::kBroadcast, sequence, data.size(), root}, Clock::now() + seconds(20),
                         Describe);
}

Status ReduceScatter(CollectiveArea& area, std::span<const float> data, std::span<float> out, ReduceKind op,
                     uint64_t sequence) {
  return ReduceScatterInArea(area, data, out, op, {CollectiveOp::kReduceScatter, sequence, data.size()},
                             Clock::now() + seconds(20), Describe);
}

// Back to back in one area, every op, lengths of none, one and several
// chunks: every member checks every result against its inputs' definition.
TEST(CollectiveArea, EveryOpBackToBackGivesEveryMemberItsDefinedResult) {
  constexpr int kSize = 3;
  const size_t lengths[] = {0, 1, 2 * kChunkElements + 5};
  auto areas = OpenedAreas(kSize);
  auto statuses = RunMembers(areas, [&](CollectiveArea& area, int rank) -> Status {
    uint64_t sequence = 0;
    for (size_t length : lengths) {
      const std::string where = " of " + std::to_string(length) + " elements";
      // all_gather: member m's block holds RandomFloats(m).
      std::vector<float> gathered(kSize * length);
      if (Status s = AllGather(area, RandomFloats(rank, length), gathered, sequence++); !s) return s;
      for (int member = 0; member < kSize; ++member) {
        if (!std::equal(gathered.begin() + member * length, gathered.begin() + (member + 1) * length,
                        RandomFloats(member, length).begin())) {
          return Error::Corruption("all_gather" + where + ": block " + std::to_string(member));
        }
      }
      // broadcast from every root.
      for (int root = 0; root < kSize; ++root) {
        std::vector<float> data = RandomFloats(rank, length);
        if (Status s = Broadcast(area, data, root, sequence++); !s) return s;
        if (data != RandomFloats(root, length)) {
          return Error::Corruption("broadcast" + where + " from " + std::to_string(root));
        }
      }
      // reduce_scatter: blocks of `length` elements, reduced in member order.
      std::vector<float> mine(length);
      if (Status s =
              ReduceScatter(area, RandomFloats(rank, kSize * length), mine, ReduceKind::kSum, sequence++);
          !s) {
        return s;
      }
      std::vector<float> expected(length);
      for (int member = 0; member < kSize; ++member) {
        const std::vector<float> input = RandomFloats(member, kSize * length);
        for (size_t i = 0; i < length; ++i) {
          const float value = input[rank * length + i];
          expected[i] = member == 0 ? value : expected[i] + value;
        }
      }
      if (mine != expected) return Error::Corruption("reduce_scatter" + where);
    }
    return {};
  });
  for (int rank = 0; rank < kSize; ++rank) EXPECT_EQ(statuses[rank], "ok") << "rank " << rank;
}

TEST(CollectiveArea, BroadcastOfAnotherLengthIsLengthMismatchOnTheRootToo) {
  auto areas = OpenedAreas(2);
  auto statuses = RunMembers(areas, [&](CollectiveArea& area, int rank) {
    std::vector<float> data(rank == 0 ? 4 : 5, 1.0f);
    return Broadcast(area, data, /*root=*/0, 0);
  });
  for (const std::string& status : statuses) EXPECT_EQ(status.rfind("LengthMismatch: ", 0), 0u) << status;
}

TEST(CollectiveArea, BroadcastFromAnotherRootIsCollectiveMismatch) {
  auto areas = OpenedAreas(2);
  auto statuses = RunMembers(areas, [&](CollectiveArea& area, int rank) {
    std::vector<float> data(4, 1.0f);
    return Broadcast(area, data, /*root=*/rank, 0);
  });
  EXPECT_EQ(statuses[0],
            "CollectiveMismatch: this rank is in collective under test from root 0 but the peer sent "
            "broadcast #0 from root 1 (rank 1)");
  EXPECT_EQ(statuses[1].rfind("CollectiveMismatch: ", 0), 0u) << statuses[1];
}

TEST(CollectiveArea, DifferentLengthsAreLengthMismatchOnEveryMember) {
  auto areas = OpenedAreas(2);
  auto statuses = RunMembers(areas, [&](CollectiveArea& area, int rank) {
    std::vector<float> data(rank == 0 ? 4 : 5, 1.0f);
    return AllReduce(area, data, ReduceKind::kSum, 0);
  });
  for (const std::string& status : statuses) EXPECT_EQ(status.rfind("LengthMismatch: ", 0), 0u) << status;
}

TEST(CollectiveArea, PeerInAnotherCollectiveIsCollectiveMismatch) {
  auto areas = OpenedAreas(2);
  // Member 1 runs all_gather #0 elsewhere (e.g. over messages).
  areas[1]->Announce(CollectiveOp::kAllGather, 0);
  std::vector<float> data(4, 1.0f);
  areas[0]->Announce(CollectiveOp::kAllReduce, 0);
  Status status = AllReduce(*areas[0], data, ReduceKind::kSum, 0);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(
      status.error().ToString(),
      "CollectiveMismatch: this rank is in collective under test but the peer sent all_gather #0 (rank 1)");
}

TEST(CollectiveArea, MemberThatNeverArrivesIsATimeoutNamingItsJobRank) {
  auto areas = OpenedAreas(3);
  std::vector<float> data(4, 1.0f);
  // Members 0 and 1 post; member 2 never does.
  std::thread other([&] {
    std::vector<float> mine(4, 1.0f);
    (void)AllReduceInArea(*areas[1], mine, ReduceKind::kSum, {CollectiveOp::kAllReduce, 0, mine.size()},
                          Clock::now() + std::chrono::milliseconds(300), Describe);
  });
  Status status =
      AllReduceInArea(*areas[0], data, ReduceKind::kSum, {CollectiveOp::kAllReduce, 0, data.size()},
                      Clock::now() + std::chrono::milliseconds(300), Describe);
  other.join();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, ErrorKind::kTimeout) << status.error().ToString();
  EXPECT_NE(status.error().message.find("waiting for the input of member 2 (rank 12)"), std::string::npos)
      << status.error().ToString();
}

TEST(CollectiveArea, AlsoCheckErrorEndsTheWaitBeforeTheDeadline) {
  auto areas = OpenedAreas(2);
  ASSERT_TRUE(areas[0]
                  ->WatchMembers(MemberRanks(2),
                                 [] {
                                   return Status(Error{ErrorKind::kPeerLost, "rank 1 gave up"});
                                 })
                  .ok());
  std::vector<float> data(4, 1.0f);
  // Member 1 never arrives; only the check can end this wait early.
  Status status = AllReduce(*areas[0], data, ReduceKind::kSum, 0);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().ToString(), "PeerLost: rank 1 gave up");
}

TEST(CollectiveArea, KilledMemberIsPeerLostBeforeTheDeadlineAndLeavesNothingInDevShm) {
  const std::set<std::string> before = DevShmEntries();
  Result<std::unique_ptr<CollectiveArea>> created = CollectiveArea::Create(0, 2);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  CollectiveArea& area = **created;
  const SegmentAddress address = area.address();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Member 1: one all_reduce, then it hangs until killed.
    Result<std::unique_ptr<CollectiveArea>> opened = CollectiveArea::Open(address, 1, 2);
    if (!opened || !(*opened)->WatchMembers(MemberRanks(2), nullptr)) _exit(2);
    std::vector<float> data(8, 1.0f);
    if (!AllReduce(**opened, data, ReduceKind::kSum, 0)) _exit(3);
    pause();
    _exit(4);
  }
  Status watched = Error::InvalidArgument("not yet");
  const Deadline give_up = Clock::now() + seconds(20);
  while (!watched && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    watched = area.WatchMembers(MemberRanks(2), nullptr);
  }
  ASSERT_TRUE(watched.ok()) << watched.error().ToString();
  area.StopSharing();
  std::vector<float> data(8, 1.0f);
  ASSERT_TRUE(AllReduce(area, data, ReduceKind::kSum, 0).ok());
  EXPECT_EQ(data[0], 2.0f);

  std::thread killer([child] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(child, SIGKILL);
  });
  // The deadline is far away: only the dead member's pidfd can end this wait
  // with PeerLost (the deadline would give Timeout).
  Status lost = AllReduce(area, data, ReduceKind::kSum, 1);
  killer.join();
  int child_status = 0;
  waitpid(child, &child_status, 0);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.error().kind, ErrorKind::kPeerLost) << lost.error().ToString();
  // Named by its rank in the job, not its place in the area.
  EXPECT_NE(lost.error().message.find("rank 11 "), std::string::npos) << lost.error().ToString();
  EXPECT_TRUE(WIFSIGNALED(child_status) && WTERMSIG(child_status) == SIGKILL);
  EXPECT_EQ(DevShmEntries(), before);
}

}  // namespace
}  // namespace inferno
