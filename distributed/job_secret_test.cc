#include "distributed/job_secret.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
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

// A file holding `contents` with `mode`, removed at the end of the test.
class SecretFile {
 public:
  SecretFile(const std::string& contents, mode_t mode)
      : path_(std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/job_secret_" +
              std::to_string(getpid())) {
    std::FILE* file = std::fopen(path_.c_str(), "w");
    std::fputs(contents.c_str(), file);
    std::fclose(file);
    chmod(path_.c_str(), mode);
  }
  ~SecretFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(JobSecretFile, OwnersOnlyFileWithOrWithoutNewlineIsRead) {
  for (const char* end : {"", "\n"}) {
    SecretFile file(std::string(64, 'c') + end, 0600);
    Result<JobSecret> secret = ReadJobSecretFile(file.path());
    ASSERT_TRUE(secret) << secret.error().ToString();
    EXPECT_EQ(secret->bytes[31], 0xcc);
  }
  SecretFile read_only(std::string(64, 'c'), 0400);
  EXPECT_TRUE(ReadJobSecretFile(read_only.path()));
}

TEST(JobSecretFile, FileOthersMayReadIsRefusedSayingChmod600) {
  for (const mode_t mode : {0644, 0640, 0602}) {
    SecretFile file(std::string(64, 'c'), mode);
    Result<JobSecret> secret = ReadJobSecretFile(file.path());
    ASSERT_FALSE(secret) << mode;
    EXPECT_EQ(secret.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_NE(secret.error().message.find("INFERNO_JOB_SECRET_FILE='" + file.path() + "' has mode 0"),
              std::string::npos)
        << secret.error().message;
    EXPECT_NE(secret.error().message.find("chmod 600"), std::string::npos);
  }
}

TEST(JobSecretFile, MissingDirectoryOrMalformedFileNamesThePathNotTheContents) {
  Result<JobSecret> missing = ReadJobSecretFile("/nonexistent/secret");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::kIo);
  EXPECT_NE(missing.error().message.find("'/nonexistent/secret': cannot open"), std::string::npos);
  Result<JobSecret> directory = ReadJobSecretFile("/");
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message.find("is not a regular file"), std::string::npos);
  SecretFile short_file("deadbeef\n", 0600);
  Result<JobSecret> malformed = ReadJobSecretFile(short_file.path());
  ASSERT_FALSE(malformed);
  EXPECT_NE(malformed.error().message.find("expected 64 hex digits"), std::string::npos)
      << malformed.error().message;
  EXPECT_EQ(malformed.error().message.find("deadbeef"), std::string::npos) << "the contents were echoed";
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
