#include "distributed/tcp/frame_seal.h"

#include <sodium.h>

#include <glog/logging.h>

#include "base/byte_codec.h"

namespace inferno {
namespace {

// crypto_kdf's context: 8 bytes naming what the derived keys are for.
constexpr char kKdfContext[crypto_kdf_CONTEXTBYTES + 1] = "infrdata";

void InitSodium() { CHECK_GE(sodium_init(), 0) << "libsodium could not initialize"; }

std::array<unsigned char, 32> DirectionKey(const DataKey& receiver_key, int source) {
  static_assert(crypto_kdf_KEYBYTES == 32 && crypto_aead_chacha20poly1305_ietf_KEYBYTES == 32);
  static_assert(crypto_aead_chacha20poly1305_ietf_ABYTES == kSealTagBytes);
  InitSodium();
  CHECK_GE(source, 0);
  std::array<unsigned char, 32> key;
  CHECK_EQ(crypto_kdf_derive_from_key(key.data(), key.size(), static_cast<uint64_t>(source), kKdfContext,
                                      receiver_key.bytes().data()),
           0);
  return key;
}

std::array<unsigned char, crypto_aead_chacha20poly1305_ietf_NPUBBYTES> Nonce(uint64_t counter) {
  std::array<unsigned char, crypto_aead_chacha20poly1305_ietf_NPUBBYTES> nonce{};
  StoreLittleEndian(std::as_writable_bytes(std::span(nonce)).first<8>(), counter);
  return nonce;
}

unsigned char* Bytes(std::span<std::byte> span) { return reinterpret_cast<unsigned char*>(span.data()); }

}  // namespace

DataKey DataKey::Random() {
  InitSodium();
  DataKey key;
  randombytes_buf(key.bytes_.data(), key.bytes_.size());
  return key;
}

Result<DataKey> DataKey::Parse(const std::string& what, const std::string& text) {
  DataKey key;
  size_t length = 0;
  const char* end = nullptr;
  if (text.size() != 2 * key.bytes_.size() ||
      sodium_hex2bin(key.bytes_.data(), key.bytes_.size(), text.data(), text.size(), nullptr, &length,
                     &end) != 0 ||
      length != key.bytes_.size()) {
    return Error::InvalidArgument(what + ": a data key is 64 hex digits, got " + std::to_string(text.size()) +
                                  " characters");
  }
  return key;
}

std::string DataKey::ToHex() const {
  char hex[2 * 32 + 1];
  sodium_bin2hex(hex, sizeof(hex), bytes_.data(), bytes_.size());
  return hex;
}

FrameSealer::FrameSealer(const DataKey& receiver_key, int source)
    : key_(DirectionKey(receiver_key, source)) {}

void FrameSealer::Seal(std::span<std::byte> frame) {
  CHECK_GE(frame.size(), kSealedLengthBytes + kSealTagBytes);
  CHECK_LE(frame.size() - kSealedLengthBytes, uint64_t{UINT32_MAX});
  CHECK_LT(counter_, UINT64_MAX) << "data path nonce exhausted";
  const std::span<std::byte> length = frame.first(kSealedLengthBytes);
  StoreLittleEndian(length, static_cast<uint32_t>(frame.size() - kSealedLengthBytes));
  const std::span<std::byte> plain =
      frame.subspan(kSealedLengthBytes, frame.size() - kSealedLengthBytes - kSealTagBytes);
  const auto nonce = Nonce(counter_++);
  crypto_aead_chacha20poly1305_ietf_encrypt_detached(Bytes(plain), Bytes(frame.last(kSealTagBytes)), nullptr,
                                                     Bytes(plain), plain.size(), Bytes(length), length.size(),
                                                     nullptr, nonce.data(), key_.data());
}

FrameOpener::FrameOpener(const DataKey& own_key, int source)
    : source_(source), key_(DirectionKey(own_key, source)) {}

Result<std::span<std::byte>> FrameOpener::Open(std::span<std::byte> frame) {
  if (frame.size() < kSealedLengthBytes + kSealTagBytes ||
      LoadLittleEndian<uint32_t>(frame.first(kSealedLengthBytes)) != frame.size() - kSealedLengthBytes) {
    return Error::Transport("data path: frame " + std::to_string(counter_) + " from rank " +
                            std::to_string(source_) + " has a length that does not match its field");
  }
  const std::span<std::byte> length = frame.first(kSealedLengthBytes);
  const std::span<std::byte> plain =
      frame.subspan(kSealedLengthBytes, frame.size() - kSealedLengthBytes - kSealTagBytes);
  const auto nonce = Nonce(counter_);
  if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(Bytes(plain), nullptr, Bytes(plain), plain.size(),
                                                         Bytes(frame.last(kSealTagBytes)), Bytes(length),
                                                         length.size(), nonce.data(), key_.data()) != 0) {
    return Error::Transport("data path: frame " + std::to_string(counter_) + " from rank " +
                            std::to_string(source_) +
                            " failed authentication (not sealed by that rank for this one, altered, replayed "
                            "or out of order)");
  }
  ++counter_;
  return plain;
}

}  // namespace inferno
