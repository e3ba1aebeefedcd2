#include "distributed/shm/segment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

namespace inferno {
namespace {

Error IoError(const std::string& what) { return Error::Io(what + ": " + std::strerror(errno)); }

// Maps `fd` (of `bytes` bytes) shared, read-write.
Result<std::byte*> MapShared(int fd, size_t bytes, const std::string& what) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (data == MAP_FAILED) return IoError("mmap of " + what);
  return static_cast<std::byte*>(data);
}

}  // namespace

std::string SegmentAddress::ToString() const {
  return std::to_string(pid) + ":" + std::to_string(fd) + ":" + std::to_string(bytes);
}

Result<SegmentAddress> SegmentAddress::Parse(const std::string& text) {
  long long pid = 0;
  int fd = 0;
  unsigned long long bytes = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%lld:%d:%llu%n", &pid, &fd, &bytes, &consumed) != 3 ||
      consumed != static_cast<int>(text.size()) || pid <= 0 || fd < 0 || bytes == 0) {
    return Error::InvalidArgument("shared-memory segment address '" + text + "' is not <pid>:<fd>:<bytes>");
  }
  return SegmentAddress{static_cast<pid_t>(pid), fd, static_cast<size_t>(bytes)};
}

Result<SharedSegment> SharedSegment::Create(size_t bytes) {
  const int fd = memfd_create("inferno-shm", MFD_CLOEXEC);
  if (fd < 0) return IoError("memfd_create");
  const std::string what = "a shared-memory segment of " + std::to_string(bytes) + " bytes";
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Error error = IoError("sizing " + what);
    close(fd);
    return error;
  }
  Result<std::byte*> data = MapShared(fd, bytes, what);
  if (!data) {
    close(fd);
    return data.error();
  }
  return SharedSegment(*data, bytes, fd, SegmentAddress{getpid(), fd, bytes});
}

Result<SharedSegment> SharedSegment::Open(const SegmentAddress& address) {
  const std::string path = "/proc/" + std::to_string(address.pid) + "/fd/" + std::to_string(address.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (kill(address.pid, 0) != 0 && errno == ESRCH) {
      return Error{ErrorKind::kPeerLost, "opening shared-memory segment " + path + ": process " +
                                             std::to_string(address.pid) + " has ended"};
    }
    return IoError("opening shared-memory segment " + path);
  }
  struct stat status {};
  if (fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) ||
      static_cast<size_t>(status.st_size) != address.bytes) {
    close(fd);
    return Error::Io("opening shared-memory segment " + path + ": not a segment of " +
                     std::to_string(address.bytes) + " bytes");
  }
  Result<std::byte*> data = MapShared(fd, address.bytes, path);
  close(fd);  // the mapping keeps the memory
  if (!data) return data.error();
  return SharedSegment(*data, address.bytes, -1, address);
}

SharedSegment::SharedSegment(SharedSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)),
      address_(other.address_) {}

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
    address_ = other.address_;
  }
  return *this;
}

SharedSegment::~SharedSegment() { Release(); }

void SharedSegment::StopSharing() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  address_.fd = -1;
}

void SharedSegment::Release() {
  StopSharing();
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
}

}  // namespace inferno
