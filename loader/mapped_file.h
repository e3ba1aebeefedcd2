// MappedFile: a whole file memory-mapped read-only — or the bytes of a file
// held in memory, such as a shard received over the network; and
// ReadTextFile, for the small JSON files (config.json, indexes, manifests)
// that sit beside them.
//
// Thread-safety: all methods may be called from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"

namespace inferno {

class MappedFile {
 public:
  // Maps `path`; fails naming the path and errno's message. An empty file
  // maps to an empty span.
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path);

  // A "file" whose contents are `bytes`, named `name` in messages.
  static std::unique_ptr<MappedFile> FromBytes(std::string name, std::vector<std::byte> bytes);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  // Which file was mapped, as its descriptor's fstat gave it when opened:
  // "device:inode:size:modification time in ns". Two opens of an unchanged
  // file give the same identity; a file replaced or rewritten since (whose
  // modification time the writer changed) gives another. Empty for
  // FromBytes files.
  const std::string& identity() const { return identity_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

  // Prepares bytes [begin, end) to be read soon: maps their pages at once
  // where the kernel can (reading them if not cached), else hints read-ahead.
  void WillNeed(uint64_t begin, uint64_t end) const;
  // Like WillNeed, for bytes read again and again (weights used in place):
  // pages not yet cached are read as 2 MiB folios where the file system can,
  // and mapped whole, since reading gigabytes through 4 KiB pages costs a TLB
  // miss per page on every pass. Pages already cached keep their size.
  void KeepMapped(uint64_t begin, uint64_t end) const;
  // Drops the pages of bytes [begin, end) from this process's resident set;
  // they stay in the page cache and are read again on the next access. Keeps
  // the RSS of a streaming reader bounded. No-op for FromBytes files.
  void Release(uint64_t begin, uint64_t end) const;

 private:
  MappedFile(std::string path, const std::byte* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  std::string identity_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::vector<std::byte> owned_;  // FromBytes: the contents; data_ points here
  bool mapped_ = false;
};

// The whole contents of a small file; fails naming the path and errno's
// message.
Result<std::string> ReadTextFile(const std::string& path);

}  // namespace inferno
