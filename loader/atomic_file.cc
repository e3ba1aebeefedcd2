#include "loader/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <glog/logging.h>

namespace inferno {

Result<AtomicFile> AtomicFile::Create(const std::string& path) {
  const std::string partial = path + ".partial";
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error::Io(partial + ": cannot create: " + std::strerror(errno));
  return AtomicFile(path, fd);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

AtomicFile::~AtomicFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(partial_path().c_str());
}

Status AtomicFile::Write(std::span<const std::byte> bytes) {
  CHECK_GE(fd_, 0) << "AtomicFile::Write after Commit: " << path_;
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Io(partial_path() + ": write failed: " + std::strerror(errno));
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  return {};
}

Status AtomicFile::Write(const std::string& bytes) {
  return Write(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
}

Status AtomicFile::Commit() {
  CHECK_GE(fd_, 0) << "AtomicFile::Commit twice: " << path_;
  const int fd = fd_;
  fd_ = -1;
  // On disk before it has its final name: a crash after the rename never
  // leaves a final name over bytes that were still in the page cache.
  if (::fsync(fd) != 0) {
    const std::string message = partial_path() + ": fsync failed: " + std::strerror(errno);
    ::close(fd);
    ::unlink(partial_path().c_str());
    return Error::Io(message);
  }
  if (::close(fd) != 0) {
    const std::string message = partial_path() + ": close failed: " + std::strerror(errno);
    ::unlink(partial_path().c_str());
    return Error::Io(message);
  }
  if (std::rename(partial_path().c_str(), path_.c_str()) != 0) {
    const std::string message = partial_path() + ": rename to " + path_ + " failed: " + std::strerror(errno);
    ::unlink(partial_path().c_str());
    return Error::Io(message);
  }
  return {};
}

}  // namespace inferno
