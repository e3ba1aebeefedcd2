// AtomicFile: an output file that appears under its final name only when it is
// complete. Bytes go to "<path>.partial"; Commit() fsyncs it and renames it
// to `path`; a file
// destroyed without Commit() removes the partial file, so an interrupted
// writer never leaves anything that looks finished (a killed process leaves
// only a ".partial" file, which the next run overwrites).
//
// Thread-safety: one object must not be used from several threads at once.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "base/error.h"

namespace inferno {

class AtomicFile {
 public:
  // Creates (or truncates) "<path>.partial".
  static Result<AtomicFile> Create(const std::string& path);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  // Appends `bytes`; fails naming the file and errno's message (e.g. a full
  // disk).
  Status Write(std::span<const std::byte> bytes);
  Status Write(const std::string& bytes);
  // Flushes the file to disk (fsync), closes it and renames it to its final
  // name; on any failure removes the partial file. Precondition: called at
  // most once.
  Status Commit();

  const std::string& path() const { return path_; }

 private:
  AtomicFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string partial_path() const { return path_ + ".partial"; }

  std::string path_;
  int fd_ = -1;  // -1 once committed or moved from
};

}  // namespace inferno
