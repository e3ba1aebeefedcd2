#include "distributed/job_secret.h"

#include <string>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(JobSecret, ParsesHexDigitsOfEitherCase) {
  const std::string text = "00112233445566778899aabbccddeeffFFEEDDCCBBAA99887766554433221100";
  Result<JobSecret> secret = ParseJobSecret(text);
  ASSERT_TRUE(secret) << secret.error().ToString();
  EXPECT_EQ(secret->bytes[0], 0x00);
  EXPECT_EQ(secret->bytes[1], 0x11);
  EXPECT_EQ(secret->bytes[15], 0xff);
  EXPECT_EQ(secret->bytes[16], 0xff);
  EXPECT_EQ(secret->bytes[31], 0x00);
}

TEST(JobSecret, WrongLengthIsAnErrorNamingTheVariable) {
  Result<JobSecret> secret = ParseJobSecret("abc123");
  ASSERT_FALSE(secret);
  EXPECT_EQ(secret.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(secret.error().message.find("INFERNO_JOB_SECRET"), std::string::npos);
  EXPECT_NE(secret.error().message.find("got 6 characters"), std::string::npos);
  EXPECT_EQ(secret.error().message.find("abc123"), std::string::npos) << "the secret was echoed";
}

TEST(JobSecret, NonHexCharacterIsAnErrorNamingItsPosition) {
  std::string text(64, 'a');
  text[9] = 'g';
  Result<JobSecret> secret = ParseJobSecret(text);
  ASSERT_FALSE(secret);
  EXPECT_NE(secret.error().message.find("INFERNO_JOB_SECRET: character 10 is not a hex digit"),
            std::string::npos)
      << secret.error().message;
}

TEST(JobSecret, NewSecretsParseAndDiffer) {
  Result<std::string> first = NewJobSecretText();
  Result<std::string> second = NewJobSecretText();
  ASSERT_TRUE(first && second);
  EXPECT_TRUE(ParseJobSecret(*first));
  EXPECT_TRUE(ParseJobSecret(*second));
  EXPECT_NE(*first, *second);
}

}  // namespace
}  // namespace inferno
