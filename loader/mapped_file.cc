#include "loader/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace inferno {
namespace {

// The page-aligned range covering [begin, end), clipped to `size`. Dropping
// a neighbour's page is harmless: the mapping is never written, so the page is
// simply read again from the page cache.
std::pair<uint64_t, uint64_t> PageRange(uint64_t begin, uint64_t end, uint64_t size) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return {begin / page * page, std::min(end, size)};
}

}  // namespace

Result<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::Io(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const std::string message = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return Error::Io(message);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error::InvalidArgument(path + ": not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  const std::byte* data = nullptr;
  if (size > 0) {
    void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      const std::string message =
          path + ": cannot mmap " + std::to_string(size) + " bytes: " + std::strerror(errno);
      ::close(fd);
      return Error::Io(message);
    }
    data = static_cast<const std::byte*>(mapped);
  }
  ::close(fd);
  auto file = std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
  file->mapped_ = size > 0;
  file->identity_ = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                    std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                    std::to_string(st.st_mtim.tv_nsec);
  return file;
}

std::unique_ptr<MappedFile> MappedFile::FromBytes(std::string name, std::vector<std::byte> bytes) {
  auto file = std::unique_ptr<MappedFile>(new MappedFile(std::move(name), nullptr, 0));
  file->owned_ = std::move(bytes);
  file->data_ = file->owned_.data();
  file->size_ = file->owned_.size();
  return file;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<std::byte*>(data_), size_);
}

void MappedFile::WillNeed(uint64_t begin, uint64_t end) const {
  if (!mapped_) return;
  const auto [first, last] = PageRange(begin, end, size_);
  if (last <= first) return;
  void* start = const_cast<std::byte*>(data_) + first;
#ifdef MADV_POPULATE_READ
  // Maps every page in one call instead of one fault per page (Linux 5.14+).
  if (::madvise(start, last - first, MADV_POPULATE_READ) == 0) return;
#endif
  ::madvise(start, last - first, MADV_WILLNEED);
}

void MappedFile::KeepMapped(uint64_t begin, uint64_t end) const {
  if (mapped_) {
    const auto [first, last] = PageRange(begin, end, size_);
    // Pages read in from here on come as 2 MiB folios where the file system
    // can, and are then mapped whole (a hint: may fail).
    if (last > first) ::madvise(const_cast<std::byte*>(data_) + first, last - first, MADV_HUGEPAGE);
  }
  WillNeed(begin, end);
}

void MappedFile::Release(uint64_t begin, uint64_t end) const {
  if (!mapped_) return;  // MADV_DONTNEED would zero heap memory
  const auto [first, last] = PageRange(begin, end, size_);
  if (last > first) ::madvise(const_cast<std::byte*>(data_) + first, last - first, MADV_DONTNEED);
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::Io(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return Error::Io(path + ": read failed");
  return contents.str();
}

}  // namespace inferno
