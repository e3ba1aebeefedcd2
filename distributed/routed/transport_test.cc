#include "distributed/routed/transport.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/inproc/transport.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

// Ranks 0 and 1 share a "host" (the local world), rank 2 is elsewhere; every
// rank is in the control world. The planes are in-process worlds, so a test
// can look at each plane directly.
struct Planes {
  std::shared_ptr<InProcessWorld> control = std::make_shared<InProcessWorld>(3, milliseconds(2000));
  std::shared_ptr<InProcessWorld> local = std::make_shared<InProcessWorld>(3, milliseconds(2000));
  std::vector<std::shared_ptr<Transport>> control_transports, local_transports;

  Planes() {
    for (int rank = 0; rank < 3; ++rank) {
      control_transports.push_back(control->transport(rank));
      local_transports.push_back(local->transport(rank));
    }
  }

  RoutedTransport Routed(int rank) {
    std::vector<bool> local_peers = {rank != 2, rank != 2, false};
    return RoutedTransport(control_transports[rank], local_transports[rank], local_peers);
  }
};

const std::vector<std::byte> kBytes = {std::byte{7}, std::byte{8}};

Deadline Soon() { return Clock::now() + milliseconds(2000); }

TEST(RoutedTransport, LocalPeersGoOverTheLocalPlaneOthersAndSelfOverControl) {
  Planes planes;
  RoutedTransport rank0 = planes.Routed(0);
  EXPECT_TRUE(rank0.IsLocal(1));
  EXPECT_FALSE(rank0.IsLocal(2));
  EXPECT_FALSE(rank0.IsLocal(0));
  ASSERT_TRUE(rank0.Send(1, FrameKey{5}, kBytes, Soon()).ok());
  ASSERT_TRUE(rank0.Send(2, FrameKey{6}, kBytes, Soon()).ok());
  ASSERT_TRUE(rank0.Send(0, FrameKey{9}, kBytes, Soon()).ok());

  Result<Message> to_local = planes.local_transports[1]->Recv(0, 5, Soon());
  ASSERT_TRUE(to_local.ok()) << to_local.error().ToString();
  EXPECT_EQ(to_local->payload.size(), kBytes.size());
  Result<Message> to_remote = planes.control_transports[2]->Recv(0, 6, Soon());
  ASSERT_TRUE(to_remote.ok()) << to_remote.error().ToString();
  Result<Message> to_self = planes.control_transports[0]->Recv(0, 9, Soon());
  ASSERT_TRUE(to_self.ok()) << to_self.error().ToString();
  // Nothing crossed to the wrong plane.
  EXPECT_EQ(planes.control_transports[1]->Recv(0, 5, Clock::now()).error().kind, ErrorKind::kTimeout);
  EXPECT_EQ(planes.local_transports[2]->Recv(0, 6, Clock::now()).error().kind, ErrorKind::kTimeout);
}

TEST(RoutedTransport, RecvTakesEachPeerFromItsPlane) {
  Planes planes;
  RoutedTransport rank1 = planes.Routed(1);
  ASSERT_TRUE(planes.local_transports[0]->Send(1, FrameKey{3}, kBytes, Soon()).ok());
  ASSERT_TRUE(planes.control_transports[2]->Send(1, FrameKey{3}, kBytes, Soon()).ok());
  EXPECT_TRUE(rank1.Recv(0, 3, Soon()).ok());
  EXPECT_TRUE(rank1.Recv(2, 3, Soon()).ok());
  EXPECT_EQ(rank1.Recv(5, 3, Soon()).error().kind, ErrorKind::kUnknownRank);
}

TEST(RoutedTransport, AbortTellsEveryPeerOnBothPlanes) {
  Planes planes;
  RoutedTransport rank0 = planes.Routed(0);
  rank0.Abort("rank 0 lost rank 4");
  for (const auto& plane :
       {planes.local_transports[1], planes.control_transports[1], planes.control_transports[2]}) {
    Result<Message> waited = plane->Recv(2, 1, Soon());
    ASSERT_FALSE(waited.ok());
    EXPECT_EQ(waited.error().kind, ErrorKind::kPeerLost) << waited.error().ToString();
    EXPECT_NE(waited.error().message.find("rank 0 lost rank 4"), std::string::npos) << waited.error().message;
  }
}

TEST(RoutedTransport, CloseClosesBothPlanes) {
  Planes planes;
  RoutedTransport rank2 = planes.Routed(2);
  rank2.Close();
  EXPECT_EQ(rank2.Send(0, FrameKey{1}, kBytes, Soon()).error().kind, ErrorKind::kClosed);
  EXPECT_EQ(planes.local_transports[2]->Send(0, FrameKey{1}, kBytes, Soon()).error().kind,
            ErrorKind::kClosed);
}

}  // namespace
}  // namespace inferno
