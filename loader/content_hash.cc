#include "loader/content_hash.h"

namespace inferno {

ContentHash::ContentHash() { crypto_generichash_init(&state_, nullptr, 0, kContentDigestBytes); }

void ContentHash::Update(std::span<const std::byte> bytes) {
  crypto_generichash_update(&state_, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

ContentDigest ContentHash::Finish() {
  ContentDigest digest;
  crypto_generichash_final(&state_, reinterpret_cast<unsigned char*>(digest.data()), digest.size());
  return digest;
}

ContentDigest DigestOf(std::span<const std::byte> bytes) {
  ContentHash hash;
  hash.Update(bytes);
  return hash.Finish();
}

std::string DigestHex(const ContentDigest& digest) {
  std::array<char, 2 * kContentDigestBytes + 1> hex;
  sodium_bin2hex(hex.data(), hex.size(), reinterpret_cast<const unsigned char*>(digest.data()),
                 digest.size());
  return std::string(hex.data(), 2 * kContentDigestBytes);
}

}  // namespace inferno
