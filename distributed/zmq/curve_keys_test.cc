#include "distributed/zmq/curve_keys.h"

#include <gtest/gtest.h>

#include "distributed/testing/secret_filled_with.h"

namespace inferno {
namespace {

TEST(CurveKeys, SameSecretGivesSameKeysAndAnotherSecretOthers) {
  const CurveKeys keys = DeriveCurveKeys(SecretFilledWith(7));
  EXPECT_EQ(keys.public_key.size(), 40u);
  EXPECT_EQ(keys.secret_key.size(), 40u);
  EXPECT_NE(keys.public_key, keys.secret_key);
  EXPECT_EQ(DeriveCurveKeys(SecretFilledWith(7)).public_key, keys.public_key);
  EXPECT_NE(DeriveCurveKeys(SecretFilledWith(8)).public_key, keys.public_key);
}

TEST(CurveKeys, SecretKeyIsTheSecretInZ85) {
  // Z85 of 32 zero bytes is 40 '0' characters.
  EXPECT_EQ(DeriveCurveKeys(SecretFilledWith(0)).secret_key, std::string(40, '0'));
}

}  // namespace
}  // namespace inferno
