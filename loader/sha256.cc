#include "loader/sha256.h"

#include <array>

namespace inferno {

Sha256::Sha256() { crypto_hash_sha256_init(&state_); }

void Sha256::Update(std::span<const std::byte> bytes) {
  crypto_hash_sha256_update(&state_, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::string Sha256::HexDigest() {
  std::array<unsigned char, crypto_hash_sha256_BYTES> digest;
  crypto_hash_sha256_final(&state_, digest.data());
  std::array<char, 2 * crypto_hash_sha256_BYTES + 1> hex;
  sodium_bin2hex(hex.data(), hex.size(), digest.data(), digest.size());
  return std::string(hex.data(), 2 * crypto_hash_sha256_BYTES);
}

}  // namespace inferno
