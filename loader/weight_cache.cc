#include "loader/weight_cache.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "loader/mapped_file.h"

namespace inferno {

Status WeightCacheWriter::Append(std::span<const std::byte> piece) {
  if (piece.size() > bytes_ - written_) {
    return Error::Corruption(file_.path() + ": more than the " + std::to_string(bytes_) + " bytes announced");
  }
  if (piece.size() != std::min<uint64_t>(kContentPieceBytes, bytes_ - written_)) {
    return Error::Corruption(file_.path() + ": a piece of " + std::to_string(piece.size()) +
                             " bytes at byte " + std::to_string(written_) + ": pieces are " +
                             std::to_string(kContentPieceBytes) + " bytes, the last one shorter");
  }
  pieces_.push_back(DigestOf(piece));
  written_ += piece.size();
  return file_.Write(piece);
}

Status WeightCacheWriter::Commit() {
  if (written_ != bytes_) {
    return Error::Corruption(file_.path() + ": " + std::to_string(written_) + " of the " +
                             std::to_string(bytes_) + " bytes announced");
  }
  if (const ContentDigest digest = DigestOfPieces(pieces_); digest != digest_) {
    return Error::Corruption(file_.path() + ": the bytes received hash to " + DigestHex(digest) +
                             ", not to the announced " + DigestHex(digest_));
  }
  return file_.Commit();
}

Result<WeightCache> WeightCache::Open(const std::string& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) return Error::Io(folder + ": cannot make the cache folder: " + ec.message());
  return WeightCache(folder);
}

std::string WeightCache::PathOf(const ContentDigest& digest) const {
  return folder_ + "/" + DigestHex(digest) + ".safetensors";
}

Status WeightCache::Verify(const ContentDigest& digest, uint64_t bytes) const {
  const std::string path = PathOf(digest);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Error::NotFound(path + ": not in the cache");
  Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
  if (!file) return file.error();
  const std::span<const std::byte> contents = (*file)->bytes();
  if (contents.size() != bytes) {
    return Error::Corruption(path + ": holds " + std::to_string(contents.size()) + " bytes, not " +
                             std::to_string(bytes));
  }
  PiecewiseHash hash;
  hash.Update(contents);
  if (const ContentDigest found = hash.Finish(); found != digest) {
    return Error::Corruption(path + ": its bytes hash to " + DigestHex(found) + ", not to its name");
  }
  return {};
}

Result<WeightCacheWriter> WeightCache::Begin(const ContentDigest& digest, uint64_t bytes) const {
  Result<AtomicFile> file = AtomicFile::Create(PathOf(digest));
  if (!file) return file.error();
  return WeightCacheWriter(std::move(*file), digest, bytes);
}

}  // namespace inferno
