// ContentHash: the BLAKE2b-256 digest of a byte stream (libsodium's
// crypto_generichash, already linked for ZeroMQ's CURVE), which names and
// checks the weights a rank receives from the leader and keeps in its cache
// (weight_cache.h). A cryptographic hash, unlike the manifest's CRC-32C: a
// cache entry named by it is its content, and it runs at about 1 GB/s per
// core, above the links weights travel over.
//
//   ContentHash hash;
//   hash.Update(bytes);  // any number of times
//   ContentDigest digest = hash.Finish();
//   std::string name = DigestHex(digest);
//
// Thread-safety: one object must not be used from several threads at once.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>

#include <sodium.h>

namespace inferno {

inline constexpr size_t kContentDigestBytes = 32;
using ContentDigest = std::array<std::byte, kContentDigestBytes>;

class ContentHash {
 public:
  ContentHash();

  void Update(std::span<const std::byte> bytes);
  // The digest of everything passed to Update. Precondition: called once,
  // after the last Update.
  ContentDigest Finish();

 private:
  crypto_generichash_state state_;
};

// The digest of `bytes` alone.
ContentDigest DigestOf(std::span<const std::byte> bytes);

// 64 lowercase hex digits.
std::string DigestHex(const ContentDigest& digest);

}  // namespace inferno
