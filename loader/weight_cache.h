// WeightCache: a folder (infer --cache DIR) holding the weights a rank
// received from the leader, one file per rank's shard, named by its content
// hash: "<64 hex digits>.safetensors", the digest of content_hash.h.
// The next start that is offered the same digest reads the file instead of
// receiving it.
//
// Nothing half-written ever has a final name: an entry is written through
// AtomicFile ("<name>.partial", fsync, rename) and renamed only once its
// size and digest are those it was begun with. An entry is checked (re-hashed,
// one read of the file) before it is used, so a damaged file is never read
// as weights.
//
// Thread-safety: a WeightCache is an immutable value; writers of distinct
// digests may run at once, also from several processes; two writers of one
// digest at once share the partial file name and must not.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "loader/atomic_file.h"
#include "loader/content_hash.h"

namespace inferno {

// Writes one entry; see WeightCache::Begin.
class WeightCacheWriter {
 public:
  // Appends the next piece (content_hash.h: kContentPieceBytes bytes, the
  // last one shorter) and hashes it: pieces().back() is its digest, for the
  // caller to check before it goes on. Fails (Corruption) on a piece of
  // another size or one past the size the entry was begun with, (Io) naming
  // the file.
  Status Append(std::span<const std::byte> piece);
  const std::vector<ContentDigest>& pieces() const { return pieces_; }
  // Gives the entry its final name once it holds exactly the promised bytes
  // with the promised digest. Fails (Corruption, naming the entry, both
  // sizes or both digests) otherwise, leaving nothing under the final name.
  // Precondition: called at most once.
  Status Commit();

 private:
  friend class WeightCache;
  WeightCacheWriter(AtomicFile file, ContentDigest digest, uint64_t bytes)
      : file_(std::move(file)), digest_(digest), bytes_(bytes) {}

  AtomicFile file_;
  ContentDigest digest_;
  uint64_t bytes_ = 0;
  uint64_t written_ = 0;
  std::vector<ContentDigest> pieces_;
};

class WeightCache {
 public:
  // The cache in `folder`, made (with its parents) if absent. Fails (Io)
  // naming the folder.
  static Result<WeightCache> Open(const std::string& folder);

  const std::string& folder() const { return folder_; }
  // Where the entry of `digest` lives (whether or not it exists).
  std::string PathOf(const ContentDigest& digest) const;

  // OK when the entry exists with `bytes` bytes and the digest it is named
  // by; NotFound when absent; Corruption naming the file and what differs
  // when damaged (a shorter, longer or altered file); Io when unreadable.
  Status Verify(const ContentDigest& digest, uint64_t bytes) const;

  // Starts writing the entry of `digest`, which will hold `bytes` bytes
  // (replacing a damaged one when committed). Fails (Io) naming the file.
  Result<WeightCacheWriter> Begin(const ContentDigest& digest, uint64_t bytes) const;

 private:
  explicit WeightCache(std::string folder) : folder_(std::move(folder)) {}

  std::string folder_;
};

}  // namespace inferno
