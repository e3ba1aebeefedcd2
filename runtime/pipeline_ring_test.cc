#include "runtime/pipeline_ring.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/inproc/transport.h"
#include "distributed/run_ranks.h"
#include "runtime/testing/small_config.h"

namespace inferno {
namespace {

ShardPlan TwoStages() {
  Result<ShardPlan> plan = MakeShardPlan(SmallTestConfig(), 2, 1, std::nullopt);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return *plan;
}

// Rank 1 (stage 0) sends `send(ring)`; returns what rank 0 (stage 1, its
// successor) makes of the message with `receive(ring, received)`.
template <typename Send, typename Receive>
std::string SendAndReceive(Send send, Receive receive) {
  const ShardPlan plan = TwoStages();
  auto world = std::make_shared<InProcessWorld>(2, std::chrono::seconds(30));
  std::vector<std::shared_ptr<Transport>> transports = {world->transport(0), world->transport(1)};
  std::vector<std::string> results = RunRanks(transports, [&](ProcessGroup& group) {
    Timeline timeline(false);
    PipelineRing ring(group, plan, plan.ranks[static_cast<size_t>(group.rank())], /*num_slots=*/4,
                      /*max_messages=*/2, timeline);
    if (group.rank() == 1) {
      EXPECT_EQ(ring.successor(), 0);
      Status sent = send(ring);
      return sent ? std::string() : sent.error().message;
    }
    EXPECT_EQ(ring.predecessor(), 1);
    Result<PipelineRing::Received> received = ring.Receive();
    if (!received) return received.error().message;
    return receive(ring, *received);
  });
  EXPECT_EQ(results[1], "");
  return results[0];
}

TEST(PipelineRing, GroupArrivesAsItsMembersWithTheirPayloads) {
  const std::vector<float> payload = {1, 2, 3, 4};
  const std::string result = SendAndReceive(
      [&](PipelineRing& ring) {
        const std::vector<MessageHeader> headers = {HiddenMessage{0, 5, 1}, HiddenMessage{2, 9, 1}};
        return ring.SendStep("send hidden", headers, std::as_bytes(std::span(payload)));
      },
      [&](PipelineRing& ring, const PipelineRing::Received& received) {
        EXPECT_EQ(received.step.size(), 2u);
        std::vector<float> second(2);
        Status taken = ring.TakePayload("recv hidden", received.step[1], std::span<float>(second));
        EXPECT_TRUE(taken.ok());
        EXPECT_EQ(second, (std::vector<float>{3, 4}));
        EXPECT_EQ(SequenceOf(received.step[1].header), 2);
        return std::string("ok");
      });
  EXPECT_EQ(result, "ok");
}

TEST(PipelineRing, GroupNamingASequenceTwiceIsMalformed) {
  const std::string result = SendAndReceive(
      [](PipelineRing& ring) {
        const std::vector<MessageHeader> headers = {TokenMessage{1, 3}, TokenMessage{1, 4}};
        return ring.SendStep("send token", headers, {});
      },
      [](PipelineRing&, const PipelineRing::Received&) { return std::string("accepted"); });
  EXPECT_EQ(result, "malformed message from rank 1: a group naming sequence 1 twice");
}

TEST(PipelineRing, ClassifyRowsOfOneDraftedSequenceFollowOneAnother) {
  const std::vector<float> rows(6);
  const std::string accepted = SendAndReceive(
      [&](PipelineRing& ring) {
        const std::vector<MessageHeader> headers = {ClassifyMessage{1, 0}, ClassifyMessage{1, 0}};
        return ring.SendStep("send classify", headers, std::as_bytes(std::span(rows)));
      },
      [](PipelineRing&, const PipelineRing::Received& received) {
        return std::to_string(received.step.size()) + " rows";
      });
  EXPECT_EQ(accepted, "2 rows");
}

TEST(PipelineRing, SequenceOutsideTheSlotsIsMalformed) {
  const std::string result = SendAndReceive(
      [](PipelineRing& ring) {
        return ring.Send("send token", TokenMessage{4, 3}, {});
      },
      [](PipelineRing&, const PipelineRing::Received&) { return std::string("accepted"); });
  EXPECT_EQ(result, "malformed message from rank 1: kind 1, sequence 4");
}

TEST(PipelineRing, PayloadOfTheWrongLengthIsMalformed) {
  const std::vector<float> payload = {1, 2, 3};
  const std::string result = SendAndReceive(
      [&](PipelineRing& ring) {
        return ring.Send("send hidden", HiddenMessage{0, 0, 1}, std::as_bytes(std::span(payload)));
      },
      [](PipelineRing& ring, const PipelineRing::Received& received) {
        std::vector<float> out(2);
        Status taken = ring.TakePayload("recv hidden", received.step[0], std::span<float>(out));
        return taken ? std::string("accepted") : taken.error().message;
      });
  EXPECT_EQ(result, "malformed message from rank 1: recv hidden of 3 values, expected 2");
}

}  // namespace
}  // namespace inferno
