// Sealing the frames of the direct TCP data path (distributed/tcp): each
// frame is authenticated and encrypted with ChaCha20-Poly1305 (IETF, from
// libsodium) under a key of its own direction, with a counter nonce.
//
// Keys: every rank makes a random DataKey per job and publishes it through
// the rendezvous (which a job secret secures with CURVE, see
// distributed/rendezvous.h). Frames from rank s to rank r are sealed under
// the key derived from r's DataKey and s (crypto_kdf), so each direction of
// each pair has a key of its own: frames cannot be reflected back to their
// sender or passed off as another rank's, and a stranger without the key
// cannot make a frame that opens. The nonce is the frame's index in its
// direction (0, 1, 2, ...), never sent: a frame replayed, dropped or
// reordered fails to open.
//
// On the wire one sealed frame is
//   offset size   field
//        0    4   sealed_length  little-endian, bytes that follow (>= 16)
//        4    n   ciphertext     of the plaintext (n = sealed_length - 16)
//      4+n   16   Poly1305 tag   over the ciphertext and the 4 length bytes
// and the plaintext is one distributed/frame_header.h frame (header, payload).
//
// Thread-safety: DataKey is a value; a FrameSealer or FrameOpener is used by
// one thread at a time (its counter advances with every frame).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/error.h"

namespace inferno {

inline constexpr size_t kSealedLengthBytes = 4;
inline constexpr size_t kSealTagBytes = 16;

class DataKey {
 public:
  // A fresh random key.
  static DataKey Random();
  // Parses ToHex's form. Errors: InvalidArgument naming `what` when `text`
  // is not 64 hex digits.
  static Result<DataKey> Parse(const std::string& what, const std::string& text);
  std::string ToHex() const;

  const std::array<unsigned char, 32>& bytes() const { return bytes_; }

 private:
  std::array<unsigned char, 32> bytes_{};
};

// Seals the frames one rank sends to another, in order.
class FrameSealer {
 public:
  // Frames from rank `source` to the rank whose key is `receiver_key`.
  FrameSealer(const DataKey& receiver_key, int source);

  // `frame` is kSealedLengthBytes + plaintext + kSealTagBytes long, the
  // plaintext at offset kSealedLengthBytes; fills in the length, encrypts
  // the plaintext in place and writes the tag.
  void Seal(std::span<std::byte> frame);

 private:
  std::array<unsigned char, 32> key_;
  uint64_t counter_ = 0;
};

// Opens the frames one rank receives from another, in order.
class FrameOpener {
 public:
  // Frames from rank `source` to this rank, whose key is `own_key`.
  FrameOpener(const DataKey& own_key, int source);

  // `frame` as FrameSealer::Seal left it (its length field included);
  // decrypts the plaintext in place and returns it. Errors: Transport saying
  // that frame number N from rank S failed authentication (not sealed by
  // rank S for this rank, altered, replayed or out of order); the counter
  // does not advance then.
  Result<std::span<std::byte>> Open(std::span<std::byte> frame);

 private:
  int source_;
  std::array<unsigned char, 32> key_;
  uint64_t counter_ = 0;
};

}  // namespace inferno
