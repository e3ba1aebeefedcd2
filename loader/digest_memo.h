// DigestMemo: a folder (on rank 0 of a --fetch-weights job, its --cache DIR)
// remembering the content digests (content_hash.h) of bytes derived from
// files — a rank's shard streamed from the checkpoint — so that the next
// start offering the same shard need not read and hash it again.
//
// An entry is found by a key naming both the source and the derivation: the
// caller's key holds the source files' identities (MappedFile::identity:
// device, inode, size, modification time), so a file replaced or rewritten
// since is a different key, and never meets an old entry. (A file rewritten
// in place with its modification time restored would; so would the shard
// job's SourceFingerprint, which makes the same assumption.)
//
// An entry is "<folder>/<hex digest of the key>.digests", written through
// AtomicFile (nothing half-written has the final name):
//   the 16 bytes "inferno-digests1", u32 key length, the key, u64 bytes,
//   the 32-byte digest, u32 piece count, the pieces' 32-byte digests
// (little-endian). Find checks all of it — the key itself, the piece count
// against the size, and that the pieces hash to the digest — and takes a
// damaged entry for an absent one.
//
// Thread-safety: a DigestMemo is an immutable value; entries of distinct
// keys may be written at once, also from several processes; two writers of
// one key at once share the partial file name and must not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "loader/content_hash.h"

namespace inferno {

// The digests of one byte string: its size, whole digest and its pieces'.
struct PieceDigests {
  uint64_t bytes = 0;
  ContentDigest digest{};
  std::vector<ContentDigest> pieces;
};

class DigestMemo {
 public:
  // The memo in `folder`, made (with its parents) if absent. Fails (Io)
  // naming the folder.
  static Result<DigestMemo> Open(const std::string& folder);

  // Where the entry of `key` lives (whether or not it exists).
  std::string PathOf(const std::string& key) const;
  // The digests remembered under `key`; nullopt when absent or damaged.
  std::optional<PieceDigests> Find(const std::string& key) const;
  // Remembers `digests` under `key`, replacing an older entry. Fails (Io)
  // naming the file.
  Status Store(const std::string& key, const PieceDigests& digests) const;

 private:
  explicit DigestMemo(std::string folder) : folder_(std::move(folder)) {}

  std::string folder_;
};

}  // namespace inferno
