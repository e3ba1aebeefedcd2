// The content hash of the weights a rank receives from the leader and keeps
// in its cache (weight_cache.h): BLAKE2b-256 (libsodium's
// crypto_generichash, already linked for ZeroMQ's CURVE), over pieces. The
// bytes are cut in consecutive pieces of kContentPieceBytes (the last one
// shorter); each piece has its digest, and the content's digest is the
// BLAKE2b-256 of the pieces' digests in order. So a receiver checks every
// piece as it arrives against the list it was offered and hashes each byte
// once, and the content's digest still names the bytes alone (the cut is
// fixed). A cryptographic hash, unlike the manifest's CRC-32C: a cache entry
// named by it is its content.
//
//   PiecewiseHash hash;
//   hash.Update(bytes);  // any number of times, cut anywhere
//   ContentDigest digest = hash.Finish();
//   std::string name = DigestHex(digest);
//
// Thread-safety: one object must not be used from several threads at once;
// the functions are pure.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <sodium.h>

namespace inferno {

inline constexpr size_t kContentDigestBytes = 32;
inline constexpr size_t kContentPieceBytes = size_t{4} << 20;
using ContentDigest = std::array<std::byte, kContentDigestBytes>;

// The BLAKE2b-256 digest of `bytes` (of one piece).
ContentDigest DigestOf(std::span<const std::byte> bytes);

// The content's digest from its pieces' digests, in order.
ContentDigest DigestOfPieces(std::span<const ContentDigest> pieces);

// The digests of a stream's pieces, however the stream is cut into Update
// calls.
class PiecewiseHash {
 public:
  PiecewiseHash();

  void Update(std::span<const std::byte> bytes);
  // The content's digest (DigestOfPieces of pieces()). Precondition: called
  // once, after the last Update.
  ContentDigest Finish();
  // Every piece's digest; with Finish, the last shorter piece's too.
  const std::vector<ContentDigest>& pieces() const { return pieces_; }

 private:
  crypto_generichash_state piece_;
  size_t piece_bytes_ = 0;  // in the piece being hashed
  std::vector<ContentDigest> pieces_;
};

// 64 lowercase hex digits.
std::string DigestHex(const ContentDigest& digest);

}  // namespace inferno
