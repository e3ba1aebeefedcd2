#include "loader/content_hash.h"

#include <algorithm>

namespace inferno {
namespace {

ContentDigest Final(crypto_generichash_state& state) {
  ContentDigest digest;
  crypto_generichash_final(&state, reinterpret_cast<unsigned char*>(digest.data()), digest.size());
  return digest;
}

void Absorb(crypto_generichash_state& state, std::span<const std::byte> bytes) {
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

}  // namespace

ContentDigest DigestOf(std::span<const std::byte> bytes) {
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, kContentDigestBytes);
  Absorb(state, bytes);
  return Final(state);
}

ContentDigest DigestOfPieces(std::span<const ContentDigest> pieces) {
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, kContentDigestBytes);
  for (const ContentDigest& piece : pieces) Absorb(state, piece);
  return Final(state);
}

PiecewiseHash::PiecewiseHash() { crypto_generichash_init(&piece_, nullptr, 0, kContentDigestBytes); }

void PiecewiseHash::Update(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const size_t size = std::min(bytes.size(), kContentPieceBytes - piece_bytes_);
    Absorb(piece_, bytes.first(size));
    piece_bytes_ += size;
    bytes = bytes.subspan(size);
    if (piece_bytes_ == kContentPieceBytes) {
      pieces_.push_back(Final(piece_));
      crypto_generichash_init(&piece_, nullptr, 0, kContentDigestBytes);
      piece_bytes_ = 0;
    }
  }
}

ContentDigest PiecewiseHash::Finish() {
  if (piece_bytes_ > 0) pieces_.push_back(Final(piece_));
  piece_bytes_ = 0;
  return DigestOfPieces(pieces_);
}

std::string DigestHex(const ContentDigest& digest) {
  std::array<char, 2 * kContentDigestBytes + 1> hex;
  sodium_bin2hex(hex.data(), hex.size(), reinterpret_cast<const unsigned char*>(digest.data()),
                 digest.size());
  return std::string(hex.data(), 2 * kContentDigestBytes);
}

}  // namespace inferno
