#include "distributed/regroup.h"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/testing/secret_filled_with.h"
#include "distributed/zmq/rendezvous_channel.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

// Rank `rank` of a secured world of `world_size` at a port free a moment ago.
RendezvousConfig Ended(int rank, int world_size, int port) {
  RendezvousConfig config;
  config.rank = rank;
  config.world_size = world_size;
  config.master_port = port;
  config.job_secret = SecretFilledWith(7);
  return config;
}

// Standby `index` of the job Ended(...) describes.
RendezvousConfig Standby(int index, int world_size, int port) {
  RendezvousConfig config = Ended(-1, world_size, port);
  config.standby = index;
  return config;
}

int FreePort() {
  Result<std::unique_ptr<RendezvousServer>> server = RendezvousServer::Listen("127.0.0.1", 0, std::nullopt);
  EXPECT_TRUE(server.ok());
  return server ? (*server)->port() : 0;
}

TEST(Regroup, OneLossClosesAtOnceAndRenumbersTheSurvivorsInOrder) {
  const int port = FreePort();
  // Rank 1 of 3 is lost; rank 2 becomes rank 1 of 2.
  auto survivor =
      std::async(std::launch::async, [port] { return Regroup(Ended(2, 3, port), 1, milliseconds(20000)); });
  const auto started = Clock::now();
  Result<Regrouped> leader = Regroup(Ended(0, 3, port), 1, milliseconds(20000));
  ASSERT_TRUE(leader.ok()) << leader.error().ToString();
  EXPECT_LT(Clock::now() - started, milliseconds(10000));  // not the window
  EXPECT_EQ(leader->config.rank, 0);
  EXPECT_EQ(leader->config.world_size, 2);
  EXPECT_EQ(leader->old_ranks, (std::vector<int>{0, 2}));
  Result<Regrouped> other = survivor.get();
  ASSERT_TRUE(other.ok()) << other.error().ToString();
  EXPECT_EQ(other->config.rank, 1);
  EXPECT_EQ(other->config.world_size, 2);
  EXPECT_EQ(other->old_ranks, (std::vector<int>{0, 2}));
}

TEST(Regroup, TwoLossesWaitForTheWindowThenGoOnWithWhoCame) {
  const int port = FreePort();
  // Ranks 1 and 2 of 4 are lost.
  auto survivor =
      std::async(std::launch::async, [port] { return Regroup(Ended(3, 4, port), 2, milliseconds(1000)); });
  Result<Regrouped> leader = Regroup(Ended(0, 4, port), 2, milliseconds(1000));
  ASSERT_TRUE(leader.ok()) << leader.error().ToString();
  EXPECT_EQ(leader->old_ranks, (std::vector<int>{0, 3}));
  Result<Regrouped> other = survivor.get();
  ASSERT_TRUE(other.ok()) << other.error().ToString();
  EXPECT_EQ(other->config.rank, 1);
  EXPECT_EQ(other->config.world_size, 2);
}

TEST(Regroup, ARequestForAnotherGenerationIsRefusedWithTheReason) {
  const int port = FreePort();
  auto stale =
      std::async(std::launch::async, [port] { return Regroup(Ended(1, 3, port), 1, milliseconds(1000)); });
  Result<Regrouped> leader = Regroup(Ended(0, 3, port), 2, milliseconds(1000));
  ASSERT_TRUE(leader.ok()) << leader.error().ToString();
  EXPECT_EQ(leader->old_ranks, (std::vector<int>{0}));
  Result<Regrouped> refused = stale.get();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("rank 1 asked to join generation 1, the leader forms generation 2"),
            std::string::npos)
      << refused.error().message;
}

TEST(Regroup, AMalformedRequestIsRefusedAndTheLeaderGoesOn) {
  const int port = FreePort();
  auto stranger = std::async(std::launch::async, [port]() -> std::string {
    Result<std::unique_ptr<RendezvousClient>> client =
        RendezvousClient::Connect("127.0.0.1", port, SecretFilledWith(7));
    if (!client || !(*client)->Send(R"({"generation": "one", "rank": 1})")) return "not sent";
    Result<std::string> reply = (*client)->Receive(Clock::now() + milliseconds(5000));
    return reply ? *reply : reply.error().ToString();
  });
  Result<Regrouped> leader = Regroup(Ended(0, 3, port), 1, milliseconds(1000));
  ASSERT_TRUE(leader.ok()) << leader.error().ToString();
  EXPECT_EQ(leader->old_ranks, (std::vector<int>{0}));
  EXPECT_EQ(stranger.get(), R"({"error":"a malformed regroup request"})");
}

TEST(Regroup, WithTheLeaderLostRankOneCoordinatesAndBecomesRankZero) {
  const int port = FreePort();
  // Rank 0 of 3 is lost; rank 1 decides and becomes rank 0, rank 2 rank 1.
  auto survivor = std::async(std::launch::async, [port] {
    return Regroup(Ended(2, 3, port), 1, milliseconds(20000), 0, /*lost_ranks=*/{0});
  });
  const auto started = Clock::now();
  Result<Regrouped> coordinator = Regroup(Ended(1, 3, port), 1, milliseconds(20000), 0, /*lost_ranks=*/{0});
  ASSERT_TRUE(coordinator.ok()) << coordinator.error().ToString();
  EXPECT_LT(Clock::now() - started, milliseconds(10000));  // not the window
  EXPECT_EQ(coordinator->config.rank, 0);
  EXPECT_EQ(coordinator->config.world_size, 2);
  EXPECT_EQ(coordinator->old_ranks, (std::vector<int>{1, 2}));
  Result<Regrouped> other = survivor.get();
  ASSERT_TRUE(other.ok()) << other.error().ToString();
  EXPECT_EQ(other->config.rank, 1);
  EXPECT_EQ(other->old_ranks, (std::vector<int>{1, 2}));
}

TEST(Regroup, ARankNamedAmongTheLostIsFencedOutAndDoesNotRegroup) {
  // A stopped leader that runs again finds itself among the lost ranks.
  Result<Regrouped> fenced = Regroup(Ended(0, 3, FreePort()), 1, milliseconds(1000), 0, /*lost_ranks=*/{0});
  ASSERT_FALSE(fenced.ok());
  EXPECT_EQ(fenced.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(fenced.error().message.find("fenced"), std::string::npos) << fenced.error().message;
}

TEST(Regroup, WithRanksZeroAndOneLostRankTwoCoordinates) {
  const int port = FreePort();
  auto survivor = std::async(std::launch::async, [port] {
    return Regroup(Ended(3, 4, port), 1, milliseconds(20000), 0, /*lost_ranks=*/{0, 1});
  });
  const auto started = Clock::now();
  Result<Regrouped> coordinator =
      Regroup(Ended(2, 4, port), 1, milliseconds(20000), 0, /*lost_ranks=*/{0, 1});
  ASSERT_TRUE(coordinator.ok()) << coordinator.error().ToString();
  EXPECT_LT(Clock::now() - started, milliseconds(10000));  // both lost named: not the window
  EXPECT_EQ(coordinator->config.rank, 0);
  EXPECT_EQ(coordinator->old_ranks, (std::vector<int>{2, 3}));
  Result<Regrouped> other = survivor.get();
  ASSERT_TRUE(other.ok()) << other.error().ToString();
  EXPECT_EQ(other->config.rank, 1);
}

TEST(Regroup, WithTheLeaderLostAStandbyTakesRankZero) {
  const int port = FreePort();
  std::atomic<bool> stop{false};
  auto standby = std::async(std::launch::async, [port, &stop] {
    return AwaitPlace(Standby(0, 3, port), [&stop] { return stop.load(); });
  });
  std::this_thread::sleep_for(milliseconds(300));
  auto survivor = std::async(std::launch::async, [port] {
    return Regroup(Ended(2, 3, port), 1, milliseconds(20000), 1, /*lost_ranks=*/{0});
  });
  Result<Regrouped> coordinator = Regroup(Ended(1, 3, port), 1, milliseconds(20000), 1, /*lost_ranks=*/{0});
  ASSERT_TRUE(coordinator.ok()) << coordinator.error().ToString();
  EXPECT_EQ(coordinator->config.rank, 1);
  EXPECT_EQ(coordinator->old_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(coordinator->standbys_taken, 1);
  Result<Regrouped> other = survivor.get();
  ASSERT_TRUE(other.ok()) << other.error().ToString();
  EXPECT_EQ(other->config.rank, 2);
  EXPECT_EQ(other->standbys_taken, 1);
  Result<std::optional<Regrouped>> placed = standby.get();
  ASSERT_TRUE(placed.ok()) << placed.error().ToString();
  ASSERT_TRUE(placed->has_value());
  EXPECT_EQ((*placed)->config.rank, 0);
  EXPECT_EQ((*placed)->config.world_size, 3);
}

TEST(Regroup, AStandbyTakesTheLostRanksPlaceAndTheOthersKeepTheirs) {
  const int port = FreePort();
  // Rank 1 of 3 is lost; standby 0 takes its place, rank 2 keeps its own.
  std::atomic<bool> stop{false};
  auto standby = std::async(std::launch::async, [port, &stop] {
    return AwaitPlace(Standby(0, 3, port), [&stop] { return stop.load(); });
  });
  // The standby calls before the regroup listens, as it does while the job runs.
  std::this_thread::sleep_for(milliseconds(300));
  auto survivor =
      std::async(std::launch::async, [port] { return Regroup(Ended(2, 3, port), 1, milliseconds(20000)); });
  const auto started = Clock::now();
  Result<Regrouped> leader = Regroup(Ended(0, 3, port), 1, milliseconds(20000), /*standbys=*/1);
  ASSERT_TRUE(leader.ok()) << leader.error().ToString();
  EXPECT_LT(Clock::now() - started, milliseconds(10000));  // not the window
  EXPECT_EQ(leader->config.world_size, 3);
  EXPECT_EQ(leader->old_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(leader->standbys_taken, 1);
  Result<Regrouped> other = survivor.get();
  ASSERT_TRUE(other.ok()) << other.error().ToString();
  EXPECT_EQ(other->config.rank, 2);
  EXPECT_EQ(other->config.world_size, 3);
  Result<std::optional<Regrouped>> placed = standby.get();
  ASSERT_TRUE(placed.ok()) << placed.error().ToString();
  ASSERT_TRUE(placed->has_value());
  EXPECT_EQ((*placed)->config.rank, 1);
  EXPECT_EQ((*placed)->config.world_size, 3);
  EXPECT_EQ((*placed)->generation, 1);
  EXPECT_FALSE((*placed)->config.standby.has_value());
}

TEST(Regroup, AStandbyNotNeededWaitsForTheNextRegroup) {
  const int port = FreePort();
  // Rank 2 of 3 is lost; of two standbys one takes its place at generation
  // 1, the other keeps waiting and takes rank 1's place at generation 2.
  std::atomic<bool> stop{false};
  auto await = [port, &stop](int index) {
    return std::async(std::launch::async, [port, index, &stop] {
      return AwaitPlace(Standby(index, 3, port), [&stop] { return stop.load(); });
    });
  };
  auto first = await(0);
  auto second = await(1);
  auto survivor =
      std::async(std::launch::async, [port] { return Regroup(Ended(1, 3, port), 1, milliseconds(20000)); });
  Result<Regrouped> leader = Regroup(Ended(0, 3, port), 1, milliseconds(20000), /*standbys=*/2);
  ASSERT_TRUE(leader.ok()) << leader.error().ToString();
  EXPECT_EQ(leader->old_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(leader->standbys_taken, 1);
  ASSERT_TRUE(survivor.get().ok());
  // Whichever standby took rank 2's place, the other is still waiting.
  const bool first_placed = first.wait_for(milliseconds(5000)) == std::future_status::ready;
  auto& placed_future = first_placed ? first : second;
  auto& waiting_future = first_placed ? second : first;
  Result<std::optional<Regrouped>> placed = placed_future.get();
  ASSERT_TRUE(placed.ok() && placed->has_value());
  EXPECT_EQ((*placed)->config.rank, 2);
  EXPECT_EQ(waiting_future.wait_for(milliseconds(500)), std::future_status::timeout);
  auto survivor2 =
      std::async(std::launch::async, [port] { return Regroup(Ended(2, 3, port), 2, milliseconds(20000)); });
  Result<Regrouped> leader2 = Regroup(Ended(0, 3, port), 2, milliseconds(20000), /*standbys=*/1);
  ASSERT_TRUE(leader2.ok()) << leader2.error().ToString();
  EXPECT_EQ(leader2->standbys_taken, 1);
  ASSERT_TRUE(survivor2.get().ok());
  Result<std::optional<Regrouped>> later = waiting_future.get();
  ASSERT_TRUE(later.ok() && later->has_value());
  EXPECT_EQ((*later)->config.rank, 1);
  EXPECT_EQ((*later)->generation, 2);
}

TEST(Regroup, TheLeaderGoesOnWithoutAStandbyThatNeverCalls) {
  const int port = FreePort();
  auto survivor =
      std::async(std::launch::async, [port] { return Regroup(Ended(2, 3, port), 1, milliseconds(20000)); });
  const auto started = Clock::now();
  Result<Regrouped> leader = Regroup(Ended(0, 3, port), 1, milliseconds(20000), /*standbys=*/1);
  ASSERT_TRUE(leader.ok()) << leader.error().ToString();
  EXPECT_LT(Clock::now() - started, kStandbyWait + milliseconds(3000));
  EXPECT_EQ(leader->old_ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(leader->standbys_taken, 0);
  ASSERT_TRUE(survivor.get().ok());
}

TEST(Regroup, AStandbyStopsWhenAsked) {
  const int port = FreePort();
  std::atomic<bool> stop{false};
  auto standby = std::async(std::launch::async, [port, &stop] {
    return AwaitPlace(Standby(0, 3, port), [&stop] { return stop.load(); });
  });
  std::this_thread::sleep_for(milliseconds(300));
  stop = true;
  ASSERT_EQ(standby.wait_for(milliseconds(3000)), std::future_status::ready);
  Result<std::optional<Regrouped>> stopped = standby.get();
  ASSERT_TRUE(stopped.ok()) << stopped.error().ToString();
  EXPECT_FALSE(stopped->has_value());
}

TEST(Regroup, AStandbyOfAnotherJobSecretGivesUpAfterItsCallsAreRefused) {
  Result<std::unique_ptr<RendezvousServer>> other =
      RendezvousServer::Listen("127.0.0.1", 0, SecretFilledWith(8));
  ASSERT_TRUE(other.ok()) << other.error().ToString();
  Result<std::optional<Regrouped>> refused =
      AwaitPlace(Standby(0, 3, (*other)->port()), [] { return false; });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kTransport) << refused.error().ToString();
  EXPECT_NE(refused.error().message.find("refused"), std::string::npos) << refused.error().message;
}

TEST(GrowBack, AReplacementHeardAtTheDeskTakesANewPlaceAndEveryRankKeepsItsOwn) {
  const int port = FreePort();
  // A job of 3 runs on 2 ranks; its leader's desk hears a replacement.
  std::promise<void> heard;
  Result<std::unique_ptr<JoinDesk>> desk = JoinDesk::Open(Ended(0, 2, port), [&heard] { heard.set_value(); });
  ASSERT_TRUE(desk.ok()) << desk.error().ToString();
  std::atomic<bool> stop{false};
  auto replacement = std::async(std::launch::async, [port, &stop] {
    return AwaitPlace(Standby(9, 1, port), [&stop] { return stop.load(); });
  });
  ASSERT_EQ(heard.get_future().wait_for(milliseconds(10000)), std::future_status::ready);
  // Rank 1's request reaches the desk first (answered "retry"), then the coordinator.
  auto member = std::async(std::launch::async,
                           [port] { return GrowBack(Ended(1, 2, port), 1, milliseconds(20000), 3); });
  std::this_thread::sleep_for(milliseconds(200));
  desk->reset();
  Result<Regrouped> leader = GrowBack(Ended(0, 2, port), 1, milliseconds(20000), 3);
  ASSERT_TRUE(leader.ok()) << leader.error().ToString();
  EXPECT_EQ(leader->config.rank, 0);
  EXPECT_EQ(leader->config.world_size, 3);
  EXPECT_EQ(leader->old_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(leader->standbys_taken, 1);
  Result<Regrouped> other = member.get();
  ASSERT_TRUE(other.ok()) << other.error().ToString();
  EXPECT_EQ(other->config.rank, 1);
  EXPECT_EQ(other->config.world_size, 3);
  Result<std::optional<Regrouped>> placed = replacement.get();
  ASSERT_TRUE(placed.ok()) << placed.error().ToString();
  ASSERT_TRUE(placed->has_value());
  EXPECT_EQ((*placed)->config.rank, 2);
  EXPECT_EQ((*placed)->config.world_size, 3);
  EXPECT_EQ((*placed)->job_size, 3);
}

TEST(GrowBack, NoReplacementCallingAgainLeavesTheMembersAsTheyWere) {
  const int port = FreePort();
  auto member = std::async(std::launch::async,
                           [port] { return GrowBack(Ended(1, 2, port), 1, milliseconds(20000), 3); });
  const auto started = Clock::now();
  Result<Regrouped> leader = GrowBack(Ended(0, 2, port), 1, milliseconds(20000), 3);
  ASSERT_TRUE(leader.ok()) << leader.error().ToString();
  EXPECT_LT(Clock::now() - started, milliseconds(10000));  // kStandbyWait, not the window
  EXPECT_EQ(leader->config.world_size, 2);
  EXPECT_EQ(leader->old_ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(leader->standbys_taken, 0);
  Result<Regrouped> other = member.get();
  ASSERT_TRUE(other.ok()) << other.error().ToString();
  EXPECT_EQ(other->config.rank, 1);
}

TEST(Regroup, ASurvivorWithoutALeaderTimesOut) {
  const int port = FreePort();
  Result<Regrouped> alone = Regroup(Ended(1, 3, port), 1, milliseconds(200));
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.error().kind, ErrorKind::kTimeout) << alone.error().ToString();
  EXPECT_NE(alone.error().message.find("did not answer"), std::string::npos) << alone.error().message;
}

}  // namespace
}  // namespace inferno
