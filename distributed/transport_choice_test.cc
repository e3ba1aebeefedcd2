#include "distributed/transport_choice.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(TransportChoice, NamesParseBackToTheirChoice) {
  for (TransportChoice choice :
       {TransportChoice::kAuto, TransportChoice::kZmq, TransportChoice::kShm, TransportChoice::kTcp}) {
    Result<TransportChoice> parsed = ParseTransportChoice("--transport", TransportChoiceName(choice));
    ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
    EXPECT_EQ(*parsed, choice);
  }
}

TEST(TransportChoice, UnknownNameIsInvalidArgumentQuotingIt) {
  Result<TransportChoice> parsed = ParseTransportChoice("--transport", "SHM");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(parsed.error().message, "--transport: expected auto, zmq, shm or tcp, got 'SHM'");
}

}  // namespace
}  // namespace inferno
