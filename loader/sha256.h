// Sha256: the SHA-256 digest (FIPS 180-4) of a byte stream, for the shard
// manifest's checksums. Uses the x86 SHA extensions when the CPU has them and
// a portable implementation otherwise; both give the same digest.
//
//   Sha256 hash;
//   hash.Update(bytes);  // any number of times
//   std::string hex = hash.HexDigest();
//
// Thread-safety: one object must not be used from several threads at once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace inferno {

class Sha256 {
 public:
  enum class Backend { kBest, kPortable };

  explicit Sha256(Backend backend = Backend::kBest);

  void Update(std::span<const std::byte> bytes);
  // The digest of everything passed to Update, as 64 lowercase hex digits.
  // Precondition: called once, after the last Update.
  std::string HexDigest();

 private:
  void Compress(const std::byte* blocks, size_t count);

  std::array<uint32_t, 8> state_;
  std::array<std::byte, 64> pending_{};
  size_t pending_size_ = 0;
  uint64_t total_bytes_ = 0;
  bool use_sha_extensions_ = false;
};

}  // namespace inferno
