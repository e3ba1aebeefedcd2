// Sha256: the SHA-256 digest (FIPS 180-4) of a byte stream, for the shard
// manifest's plan digest and source fingerprint, computed by libsodium
// (crypto_hash_sha256, already linked for ZeroMQ's CURVE). Only short texts
// are hashed (file contents are checked with crc32c), so its portable code's
// speed does not matter.
//
//   Sha256 hash;
//   hash.Update(bytes);  // any number of times
//   std::string hex = hash.HexDigest();
//
// Thread-safety: one object must not be used from several threads at once.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include <sodium.h>

namespace inferno {

class Sha256 {
 public:
  Sha256();

  void Update(std::span<const std::byte> bytes);
  // The digest of everything passed to Update, as 64 lowercase hex digits.
  // Precondition: called once, after the last Update.
  std::string HexDigest();

 private:
  crypto_hash_sha256_state state_;
};

}  // namespace inferno
