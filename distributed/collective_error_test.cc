#include "distributed/collective_error.h"

#include <chrono>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(CollectiveError, ToStringStartsWithKindName) {
  const CollectiveError error =
      CollectiveError::Timeout("all_reduce #3", 2, std::chrono::milliseconds(1500));
  EXPECT_EQ(error.kind, ErrorKind::kTimeout);
  EXPECT_EQ(error.ToString(), "Timeout: all_reduce #3: no message from rank 2 after 1500 ms");
}

TEST(CollectiveError, InvalidTagNamesTagInHex) {
  const CollectiveError error = CollectiveError::InvalidTag("send to rank 1", 0xFFF00001u);
  EXPECT_EQ(error.kind, ErrorKind::kInvalidTag);
  EXPECT_NE(error.message.find("0xfff00001"), std::string::npos) << error.message;
}

TEST(CollectiveError, LengthMismatchNamesBothLengths) {
  const CollectiveError error = CollectiveError::LengthMismatch("all_gather #0", 4, 5);
  EXPECT_EQ(error.message, "all_gather #0: length mismatch, expected 4, got 5");
}

TEST(CollectiveError, EveryKindHasADistinctName) {
  EXPECT_STREQ(ErrorKindName(ErrorKind::kCollectiveMismatch), "CollectiveMismatch");
  EXPECT_STREQ(ErrorKindName(ErrorKind::kPeerLost), "PeerLost");
  EXPECT_STREQ(ErrorKindName(ErrorKind::kUnknownRank), "UnknownRank");
  EXPECT_STREQ(ErrorKindName(ErrorKind::kClosed), "Closed");
}

}  // namespace
}  // namespace inferno
