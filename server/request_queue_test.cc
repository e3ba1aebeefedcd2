#include "server/request_queue.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using Clock = std::chrono::steady_clock;

SequenceSpec Spec(std::vector<int32_t> prompt) {
  SequenceSpec spec;
  spec.prompt = std::move(prompt);
  return spec;
}

TEST(RequestQueue, HandsOutRequestsInOrderAndRefusesBeyondTheQueueLength) {
  RequestQueue queue(2);
  Submission a = queue.Submit(Spec({1, 2}));
  Submission b = queue.Submit(Spec({3}));
  ASSERT_EQ(a.outcome, Submission::kQueued);
  ASSERT_EQ(b.outcome, Submission::kQueued);
  EXPECT_EQ(queue.Submit(Spec({4})).outcome, Submission::kQueueFull);
  EXPECT_EQ(queue.queued(), 2);
  std::optional<SequenceSpec> first = queue.Next(Clock::time_point::min());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->id, a.request->id());
  EXPECT_EQ(first->prompt, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(queue.running(), 1);
  // A slot freed in the queue: room for one more.
  EXPECT_EQ(queue.Submit(Spec({5})).outcome, Submission::kQueued);
}

TEST(RequestQueue, RequeueContinuesRunningRequestsFromPromptPlusGeneratedAheadOfTheQueued) {
  RequestQueue queue(4);
  SequenceSpec long_one = Spec({1, 2});
  long_one.max_new_tokens = 5;
  SequenceSpec short_one = Spec({3});
  short_one.max_new_tokens = 1;
  Submission a = queue.Submit(long_one);
  Submission b = queue.Submit(short_one);
  Submission waiting = queue.Submit(Spec({9}));
  ASSERT_TRUE(queue.Next(Clock::time_point::min()).has_value());
  ASSERT_TRUE(queue.Next(Clock::time_point::min()).has_value());
  queue.OnToken(a.request->id(), 2, 10);
  queue.OnToken(a.request->id(), 10, 11);
  queue.OnToken(b.request->id(), 3, 30);  // all b may generate: it ends, not requeued
  EXPECT_EQ(a.request->Take(Clock::now()).tokens, (std::vector<int32_t>{10, 11}));

  EXPECT_EQ(queue.Requeue(), 1);
  EXPECT_EQ(queue.running(), 0);
  const RequestEvents b_events = b.request->Take(Clock::now());
  EXPECT_EQ(b_events.tokens, (std::vector<int32_t>{30}));
  EXPECT_EQ(b_events.finish, FinishReason::kLength);
  std::optional<SequenceSpec> resumed = queue.Next(Clock::time_point::min());
  ASSERT_TRUE(resumed.has_value());
  EXPECT_EQ(resumed->id, a.request->id());
  EXPECT_EQ(resumed->prompt, (std::vector<int32_t>{1, 2, 10, 11}));
  EXPECT_EQ(resumed->max_new_tokens, 3);
  std::optional<SequenceSpec> next = queue.Next(Clock::time_point::min());
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id, waiting.request->id());
  // The resumed request's tokens continue its stream, after those taken.
  queue.OnToken(a.request->id(), 11, 12);
  const RequestEvents a_events = a.request->Take(Clock::now());
  EXPECT_EQ(a_events.tokens, (std::vector<int32_t>{12}));
  EXPECT_EQ(a_events.previous, 11);
}

TEST(RequestQueue, AskRegroupEndsTheLoopKeepingRunningRequestsForRequeue) {
  RequestQueue queue(4);
  Submission a = queue.Submit(Spec({1, 2}));
  Submission b = queue.Submit(Spec({3}));
  Submission waiting = queue.Submit(Spec({9}));
  ASSERT_TRUE(queue.Next(Clock::time_point::min()).has_value());
  ASSERT_TRUE(queue.Next(Clock::time_point::min()).has_value());
  queue.OnToken(a.request->id(), 2, 10);
  b.request->Cancel();
  queue.AskRegroup();
  EXPECT_TRUE(queue.regroup_asked());
  // The loop starts nothing more, cancels the running requests and ends.
  EXPECT_FALSE(queue.Next(Clock::time_point::min()).has_value());
  EXPECT_TRUE(queue.Exhausted());
  EXPECT_TRUE(queue.Cancelled(a.request->id()));
  queue.OnSequenceDone(a.request->id(), FinishReason::kCancelled);
  queue.OnSequenceDone(b.request->id(), FinishReason::kCancelled);
  EXPECT_FALSE(a.request->Take(Clock::now()).finish.has_value());
  EXPECT_EQ(b.request->Take(Clock::now()).finish, FinishReason::kCancelled);  // its client's cancel
  EXPECT_EQ(queue.running(), 1);

  EXPECT_EQ(queue.Requeue(), 1);
  EXPECT_FALSE(queue.regroup_asked());
  EXPECT_FALSE(queue.Exhausted());
  std::optional<SequenceSpec> resumed = queue.Next(Clock::time_point::min());
  ASSERT_TRUE(resumed.has_value());
  EXPECT_EQ(resumed->id, a.request->id());
  EXPECT_EQ(resumed->prompt, (std::vector<int32_t>{1, 2, 10}));
  std::optional<SequenceSpec> next = queue.Next(Clock::time_point::min());
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id, waiting.request->id());
}

TEST(RequestQueue, ASequenceWithNoTokensLeftEndsAtOnceWithLength) {
  RequestQueue queue(1);
  SequenceSpec spec = Spec({1, 2, 3});
  spec.max_new_tokens = 0;
  Submission done = queue.Submit(spec);
  ASSERT_EQ(done.outcome, Submission::kQueued);
  EXPECT_EQ(queue.queued(), 0);
  RequestEvents events = done.request->Take(Clock::now());
  ASSERT_TRUE(events.finish.has_value());
  EXPECT_EQ(*events.finish, FinishReason::kLength);
  EXPECT_TRUE(events.tokens.empty());
}

TEST(RequestQueue, TokensAndTheEndReachTheRequestInOrder) {
  RequestQueue queue(4);
  Submission submitted = queue.Submit(Spec({7, 8}));
  std::optional<SequenceSpec> spec = queue.Next(Clock::time_point::min());
  ASSERT_TRUE(spec.has_value());
  queue.OnToken(spec->id, 8, 10);
  queue.OnToken(spec->id, 10, 11);
  RequestEvents events = submitted.request->Take(Clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(events.previous, 8);
  EXPECT_EQ(events.tokens, (std::vector<int32_t>{10, 11}));
  EXPECT_FALSE(events.finish.has_value());
  queue.OnToken(spec->id, 11, 12);
  queue.OnSequenceDone(spec->id, FinishReason::kLength);
  events = submitted.request->Take(Clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(events.previous, 11);
  EXPECT_EQ(events.tokens, std::vector<int32_t>{12});
  EXPECT_EQ(events.finish, FinishReason::kLength);
  EXPECT_EQ(queue.running(), 0);
}

TEST(RequestQueue, LogprobsGoWithTheirTokensAndAStopTokensAreDropped) {
  RequestQueue queue(4);
  Submission submitted = queue.Submit(Spec({7}));
  std::optional<SequenceSpec> spec = queue.Next(Clock::time_point::min());
  ASSERT_TRUE(spec.has_value());
  queue.OnLogprobs(spec->id, TokenLogprobs{10, -0.5f, {{10, -0.5f}}});
  queue.OnToken(spec->id, 7, 10);
  queue.OnLogprobs(spec->id, TokenLogprobs{11, -1.5f, {}});
  queue.OnToken(spec->id, 10, 11);
  // The stop token's logprobs come without a token.
  queue.OnLogprobs(spec->id, TokenLogprobs{2, -0.1f, {}});
  queue.OnSequenceDone(spec->id, FinishReason::kStopToken);
  RequestEvents events = submitted.request->Take(Clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(events.tokens, (std::vector<int32_t>{10, 11}));
  ASSERT_EQ(events.logprobs.size(), 2u);
  EXPECT_EQ(events.logprobs[0].token, 10);
  EXPECT_EQ(events.logprobs[0].top, (std::vector<TopLogprob>{{10, -0.5f}}));
  EXPECT_FLOAT_EQ(events.logprobs[1].logprob, -1.5f);
}

TEST(RequestQueue, CancelledRequestStopsRunningOrNeverStarts) {
  RequestQueue queue(4);
  Submission running = queue.Submit(Spec({1}));
  Submission waiting = queue.Submit(Spec({2}));
  std::optional<SequenceSpec> spec = queue.Next(Clock::time_point::min());
  ASSERT_TRUE(spec.has_value());
  EXPECT_FALSE(queue.Cancelled(spec->id));
  running.request->Cancel();
  EXPECT_TRUE(queue.Cancelled(spec->id));
  waiting.request->Cancel();
  EXPECT_FALSE(queue.Next(Clock::time_point::min()).has_value());
  EXPECT_EQ(waiting.request->Take(Clock::now()).finish, FinishReason::kCancelled);
}

TEST(RequestQueue, NextWaitsUntilTheDeadlineOrASubmission) {
  RequestQueue queue(4);
  const Clock::time_point start = Clock::now();
  EXPECT_FALSE(queue.Next(start + std::chrono::milliseconds(20)).has_value());
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(20));
  std::thread submitter([&] { queue.Submit(Spec({3})); });
  EXPECT_TRUE(queue.Next(Clock::now() + std::chrono::seconds(30)).has_value());
  submitter.join();
}

TEST(RequestQueue, DrainRefusesNewRequestsAndExhaustsOnceEmpty) {
  RequestQueue queue(4);
  ASSERT_EQ(queue.Submit(Spec({1})).outcome, Submission::kQueued);
  queue.Drain();
  EXPECT_EQ(queue.Submit(Spec({2})).outcome, Submission::kUnavailable);
  EXPECT_FALSE(queue.Exhausted());
  EXPECT_TRUE(queue.Next(Clock::time_point::min()).has_value());
  EXPECT_TRUE(queue.Exhausted());
  EXPECT_FALSE(queue.Next(Clock::now() + std::chrono::seconds(30)).has_value()) << "must not wait";
}

TEST(RequestQueue, FailEndsQueuedAndRunningRequestsWithTheError) {
  RequestQueue queue(4);
  Submission running = queue.Submit(Spec({1}));
  Submission waiting = queue.Submit(Spec({2}));
  ASSERT_TRUE(queue.Next(Clock::time_point::min()).has_value());
  queue.Fail(Error::PeerLost("recv from", 1));
  for (Submission* s : {&running, &waiting}) {
    RequestEvents events = s->request->Take(Clock::now() + std::chrono::seconds(5));
    ASSERT_TRUE(events.error.has_value());
    EXPECT_EQ(events.error->kind, ErrorKind::kPeerLost);
  }
  EXPECT_TRUE(queue.Exhausted());
  EXPECT_EQ(queue.Submit(Spec({3})).outcome, Submission::kUnavailable);
}

}  // namespace
}  // namespace inferno
