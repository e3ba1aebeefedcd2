// Crc32c: the CRC-32C (Castagnoli) checksum of a byte stream — the checksum
// of shard files in the manifest. Cheap enough not to slow the sharding job
// down (the SSE4.2 crc32 instruction when the CPU has it, ~3 bytes per cycle;
// a table otherwise); detects any burst error up to 32 bits and random damage
// with probability 1 - 2^-32. Not a defence against deliberate tampering.
//
// Thread-safety: one object must not be used from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace inferno {

class Crc32c {
 public:
  enum class Backend { kBest, kPortable };

  explicit Crc32c(Backend backend = Backend::kBest);

  void Update(std::span<const std::byte> bytes);
  // The checksum of everything passed to Update so far.
  uint32_t value() const { return ~state_; }
  // value() as 8 lowercase hex digits.
  std::string HexDigest() const;

 private:
  uint32_t state_ = 0xFFFFFFFFu;
  bool use_sse42_ = false;
};

}  // namespace inferno
