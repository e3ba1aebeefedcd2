#include "distributed/mailbox.h"

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using std::chrono::milliseconds;

Message MessageWithTag(uint32_t tag, std::byte first) {
  return Message{FrameKey{tag, CollectiveOp::kPointToPoint, 0, 1}, Payload(std::vector<std::byte>{first})};
}

TEST(Mailbox, DeliversInOrderPerSourceAndTag) {
  Mailbox mailbox(2, milliseconds(0));
  mailbox.Deliver(1, MessageWithTag(5, std::byte{1}));
  mailbox.Deliver(1, MessageWithTag(6, std::byte{9}));
  mailbox.Deliver(1, MessageWithTag(5, std::byte{2}));
  const Deadline deadline = Clock::now() + milliseconds(100);
  Result<Message> first = mailbox.Take(1, 5, deadline);
  Result<Message> second = mailbox.Take(1, 5, deadline);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->payload.bytes()[0], std::byte{1});
  EXPECT_EQ(second->payload.bytes()[0], std::byte{2});
}

TEST(Mailbox, TakeTimesOutWhenNothingArrives) {
  Mailbox mailbox(2, milliseconds(0));
  Result<Message> taken = mailbox.Take(0, 3, Clock::now() + milliseconds(20));
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().kind, ErrorKind::kTimeout);
  EXPECT_NE(taken.error().message.find("rank 0 tag 0x00000003"), std::string::npos) << taken.error().message;
}

TEST(Mailbox, TakeWakesWhenAMessageArrives) {
  Mailbox mailbox(2, milliseconds(0));
  std::thread sender([&] {
    std::this_thread::sleep_for(milliseconds(20));
    mailbox.Deliver(0, MessageWithTag(3, std::byte{4}));
  });
  Result<Message> taken = mailbox.Take(0, 3, Clock::now() + milliseconds(5000));
  sender.join();
  ASSERT_TRUE(taken.ok()) << taken.error().ToString();
  EXPECT_EQ(taken->payload.bytes()[0], std::byte{4});
}

TEST(Mailbox, LostPeerStillDeliversQueuedMessagesThenFails) {
  Mailbox mailbox(2, milliseconds(0));
  mailbox.Deliver(1, MessageWithTag(5, std::byte{1}));
  mailbox.MarkPeerLost(1);
  const Deadline deadline = Clock::now() + milliseconds(1000);
  EXPECT_TRUE(mailbox.Take(1, 5, deadline).ok());
  Result<Message> after = mailbox.Take(1, 5, deadline);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().kind, ErrorKind::kPeerLost);
}

TEST(Mailbox, DepartedPeerDeliversQueuedMessagesThenFailsWithoutTheGrace) {
  Mailbox mailbox(2, milliseconds(60000));
  mailbox.Deliver(1, MessageWithTag(5, std::byte{1}));
  mailbox.MarkPeerDeparted(1);
  const Deadline started = Clock::now();
  const Deadline deadline = started + milliseconds(30000);
  EXPECT_TRUE(mailbox.Take(1, 5, deadline).ok());
  Result<Message> after = mailbox.Take(1, 5, deadline);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().kind, ErrorKind::kPeerLost);
  EXPECT_NE(after.error().message.find("rank 1 closed its transport"), std::string::npos)
      << after.error().message;
  EXPECT_LT(Clock::now() - started, milliseconds(10000));
}

TEST(Mailbox, JobAbortedIsOkUntilANoticeThenPeerLostQuotingIt) {
  Mailbox mailbox(3, milliseconds(60000));
  EXPECT_TRUE(mailbox.JobAborted().ok());
  mailbox.MarkPeerLost(1);
  EXPECT_TRUE(mailbox.JobAborted().ok());
  mailbox.MarkJobAborted(2, "all_reduce #3 timed out");
  const Status aborted = mailbox.JobAborted();
  ASSERT_FALSE(aborted.ok());
  EXPECT_EQ(aborted.error().kind, ErrorKind::kPeerLost);
  EXPECT_NE(aborted.error().message.find("rank 2 gave up on the job: all_reduce #3 timed out"),
            std::string::npos)
      << aborted.error().message;
}

TEST(Mailbox, AbortedJobFailsWaitersOnEverySourceAtOnceQuotingTheReason) {
  Mailbox mailbox(3, milliseconds(60000));
  mailbox.Deliver(1, MessageWithTag(5, std::byte{1}));
  const Deadline started = Clock::now();
  std::thread aborter([&] {
    std::this_thread::sleep_for(milliseconds(20));
    mailbox.MarkJobAborted(2, "recv from rank 0 timed out");
  });
  // Waits on rank 1, which is not the aborting rank.
  Result<Message> waiting = mailbox.Take(1, 9, started + milliseconds(30000));
  aborter.join();
  ASSERT_FALSE(waiting.ok());
  EXPECT_EQ(waiting.error().kind, ErrorKind::kPeerLost);
  EXPECT_NE(waiting.error().message.find("rank 2 gave up on the job: recv from rank 0 timed out"),
            std::string::npos)
      << waiting.error().message;
  // Queued messages are not handed out once the job is aborted.
  EXPECT_FALSE(mailbox.Take(1, 5, started + milliseconds(30000)).ok());
  EXPECT_LT(Clock::now() - started, milliseconds(10000));
}

TEST(Mailbox, UnresponsivePeerFailsWaitersOnEverySourceNamingIt) {
  Mailbox mailbox(3, milliseconds(60000));
  mailbox.MarkPeerUnresponsive(2, "sent no heartbeat for 1500 ms");
  Result<Message> waiting = mailbox.Take(1, 9, Clock::now() + milliseconds(30000));
  ASSERT_FALSE(waiting.ok());
  EXPECT_EQ(waiting.error().kind, ErrorKind::kPeerLost);
  EXPECT_EQ(waiting.error().message,
            "recv from rank 1 tag 0x00000009 (rank 2 is unresponsive: sent no heartbeat for 1500 ms): lost "
            "connection to rank 2");
  // The first fault recorded is the one every wait reports.
  mailbox.MarkJobAborted(1, "late");
  EXPECT_EQ(mailbox.JobAborted().error().message,
            "wait (rank 2 is unresponsive: sent no heartbeat for 1500 ms): lost connection to rank 2");
}

TEST(Mailbox, CloseFailsWaitersWithClosed) {
  Mailbox mailbox(2, milliseconds(0));
  std::thread closer([&] {
    std::this_thread::sleep_for(milliseconds(20));
    mailbox.Close();
  });
  Result<Message> taken = mailbox.Take(0, 3, Clock::now() + milliseconds(5000));
  closer.join();
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().kind, ErrorKind::kClosed);
}

TEST(Mailbox, TakeUntilReturnsNothingAtWakeByBeforeDeadline) {
  Mailbox mailbox(2, milliseconds(0));
  const Deadline now = Clock::now();
  Result<std::optional<Message>> taken =
      mailbox.TakeUntil(1, 3, now, now + milliseconds(5000), now + milliseconds(10));
  ASSERT_TRUE(taken.ok()) << taken.error().ToString();
  EXPECT_FALSE(taken->has_value());
}

TEST(Mailbox, WakeAllEndsTakeUntilEarly) {
  Mailbox mailbox(2, milliseconds(0));
  std::thread waker([&] {
    std::this_thread::sleep_for(milliseconds(20));
    mailbox.WakeAll();
  });
  const Deadline now = Clock::now();
  Result<std::optional<Message>> taken =
      mailbox.TakeUntil(1, 3, now, now + milliseconds(10000), now + milliseconds(10000));
  waker.join();
  ASSERT_TRUE(taken.ok()) << taken.error().ToString();
  EXPECT_FALSE(taken->has_value());
  EXPECT_LT(Clock::now() - now, milliseconds(5000));
}

TEST(Mailbox, UnknownSourceIsAnError) {
  Mailbox mailbox(2, milliseconds(0));
  Result<Message> taken = mailbox.Take(2, 3, Clock::now());
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().kind, ErrorKind::kUnknownRank);
}

}  // namespace
}  // namespace inferno
