#include "distributed/job_secret.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace inferno {
namespace {

// The value of hex digit `c`, or -1.
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<JobSecret> ParseJobSecret(std::string_view text) {
  if (text.size() != 2 * JobSecret::kBytes) {
    return Error::InvalidArgument(std::string(kJobSecretVariable) + ": expected " +
                                  std::to_string(2 * JobSecret::kBytes) + " hex digits (" +
                                  std::to_string(JobSecret::kBytes) + " bytes), got " +
                                  std::to_string(text.size()) + " characters");
  }
  JobSecret secret;
  for (size_t i = 0; i < text.size(); ++i) {
    const int value = HexValue(text[i]);
    if (value < 0) {
      return Error::InvalidArgument(std::string(kJobSecretVariable) + ": character " + std::to_string(i + 1) +
                                    " is not a hex digit");
    }
    secret.bytes[i / 2] = static_cast<uint8_t>(secret.bytes[i / 2] << 4 | value);
  }
  return secret;
}

Result<JobSecret> ReadJobSecretFile(const std::string& path) {
  const std::string where = std::string(kJobSecretFileVariable) + "='" + path + "'";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Error::Io(where + ": cannot open: " + std::strerror(errno));
  struct stat status {};
  std::string text(2 * JobSecret::kBytes + 2, '\0');
  ssize_t length = -1;
  std::string refusal;
  if (fstat(fd, &status) != 0) {
    refusal = std::string("cannot stat: ") + std::strerror(errno);
  } else if (!S_ISREG(status.st_mode)) {
    refusal = "is not a regular file";
  } else if (status.st_uid != geteuid()) {
    refusal = "belongs to user " + std::to_string(status.st_uid) + ", not to this user (" +
              std::to_string(geteuid()) + ")";
  } else if ((status.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(status.st_mode & 07777));
    refusal = std::string("has mode ") + mode + ", which lets others read or change it: chmod 600 it";
  } else {
    length = read(fd, text.data(), text.size());
    if (length < 0) refusal = std::string("cannot read: ") + std::strerror(errno);
  }
  close(fd);
  if (!refusal.empty()) return Error::InvalidArgument(where + " " + refusal);
  text.resize(static_cast<size_t>(length));
  if (!text.empty() && text.back() == '\n') text.pop_back();
  Result<JobSecret> secret = ParseJobSecret(text);
  if (!secret) {
    return Error::InvalidArgument(where + ": " +
                                  secret.error().message.substr(std::strlen(kJobSecretVariable) + 2));
  }
  return secret;
}

Result<std::string> NewJobSecretText() {
  std::array<uint8_t, JobSecret::kBytes> bytes;
  std::FILE* random = std::fopen("/dev/urandom", "rb");
  const bool read = random != nullptr && std::fread(bytes.data(), 1, bytes.size(), random) == bytes.size();
  const int saved_errno = errno;
  if (random != nullptr) std::fclose(random);
  if (!read) {
    return Error::Transport(std::string("cannot read /dev/urandom for a job secret: ") +
                            std::strerror(saved_errno));
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (const uint8_t byte : bytes) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 0xF];
  }
  return text;
}

}  // namespace inferno
