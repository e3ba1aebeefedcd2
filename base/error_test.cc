#include "base/error.h"

#include <chrono>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(Error, ToStringStartsWithKindName) {
  const Error error = Error::Timeout("all_reduce #3", 2, std::chrono::milliseconds(1500));
  EXPECT_EQ(error.kind, ErrorKind::kTimeout);
  EXPECT_EQ(error.ToString(), "Timeout: all_reduce #3: no message from rank 2 after 1500 ms");
}

TEST(Error, InvalidTagNamesTagInHex) {
  const Error error = Error::InvalidTag("send to rank 1", 0xFFF00001u);
  EXPECT_EQ(error.kind, ErrorKind::kInvalidTag);
  EXPECT_NE(error.message.find("0xfff00001"), std::string::npos) << error.message;
}

TEST(Error, LengthMismatchNamesBothLengths) {
  const Error error = Error::LengthMismatch("all_gather #0", 4, 5);
  EXPECT_EQ(error.message, "all_gather #0: length mismatch, expected 4, got 5");
}

TEST(Error, EveryKindHasADistinctName) {
  EXPECT_STREQ(ErrorKindName(ErrorKind::kCollectiveMismatch), "CollectiveMismatch");
  EXPECT_STREQ(ErrorKindName(ErrorKind::kPeerLost), "PeerLost");
  EXPECT_STREQ(ErrorKindName(ErrorKind::kUnknownRank), "UnknownRank");
  EXPECT_STREQ(ErrorKindName(ErrorKind::kClosed), "Closed");
}

TEST(Error, PrefixedKeepsTheKind) {
  const Error lost = Error::PeerLost("recv hidden #4", 1).Prefixed("generator: ");
  EXPECT_EQ(lost.kind, ErrorKind::kPeerLost);
  EXPECT_EQ(lost.ToString(), "PeerLost: generator: recv hidden #4: lost connection to rank 1");
}

TEST(Error, FactoriesSetTheirKind) {
  EXPECT_EQ(Error::InvalidArgument("x").kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(Error::NotFound("x").kind, ErrorKind::kNotFound);
  EXPECT_EQ(Error::Corruption("x").kind, ErrorKind::kCorruption);
  EXPECT_EQ(Error::Unimplemented("x").kind, ErrorKind::kUnimplemented);
  EXPECT_EQ(Error::Io("x").ToString(), "Io: x");
}

}  // namespace
}  // namespace inferno
