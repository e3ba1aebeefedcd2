#include "text/hf_tokenizer/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace inferno::hf {
namespace {

// Bytes that stand for themselves: '!'..'~', U+00A1..U+00AC, U+00AE..U+00FF.
bool StandsForItself(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

struct Alphabet {
  std::array<char32_t, 256> char_of_byte{};
  // Indexed by code point; every alphabet character is below U+0144.
  std::array<int16_t, 0x144> byte_of_char{};

  Alphabet() {
    byte_of_char.fill(-1);
    char32_t next_stand_in = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      const char32_t cp = StandsForItself(byte) ? static_cast<char32_t>(byte) : next_stand_in++;
      char_of_byte[byte] = cp;
      byte_of_char[cp] = static_cast<int16_t>(byte);
    }
  }
};

const Alphabet& TheAlphabet() {
  static const Alphabet alphabet;
  return alphabet;
}

}  // namespace

char32_t ByteLevelCharOf(uint8_t byte) { return TheAlphabet().char_of_byte[byte]; }

std::optional<std::string> ByteLevelToBytes(std::string_view text) {
  const Alphabet& alphabet = TheAlphabet();
  std::string bytes;
  bytes.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = Utf8CharLength(text, pos);
    if (length == 0) return std::nullopt;
    const char32_t cp = Utf8Decode(text, pos, length);
    if (cp >= alphabet.byte_of_char.size() || alphabet.byte_of_char[cp] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(alphabet.byte_of_char[cp]));
    pos += length;
  }
  return bytes;
}

}  // namespace inferno::hf
