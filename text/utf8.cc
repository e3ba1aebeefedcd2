#include "text/utf8.h"

#include <cstdint>

namespace inferno {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// For a lead byte: the sequence length and the range the second byte must lie
// in (which rules out overlong forms, surrogates and values above U+10FFFF).
struct LeadByte {
  size_t length;
  uint8_t second_min;
  uint8_t second_max;
};

LeadByte ClassifyLead(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// How many bytes from text[pos] form a valid (possibly incomplete) prefix of
// a character: 0 when text[pos] cannot start one.
size_t ValidPrefixLength(std::string_view text, size_t pos, size_t* full_length) {
  const LeadByte lead = ClassifyLead(static_cast<uint8_t>(text[pos]));
  *full_length = lead.length;
  if (lead.length <= 1) return lead.length;
  size_t n = 1;
  for (; n < lead.length && pos + n < text.size(); ++n) {
    const auto b = static_cast<uint8_t>(text[pos + n]);
    const uint8_t lo = n == 1 ? lead.second_min : 0x80;
    const uint8_t hi = n == 1 ? lead.second_max : 0xBF;
    if (b < lo || b > hi) break;
  }
  return n;
}

}  // namespace

size_t Utf8CharLength(std::string_view text, size_t pos) {
  size_t full_length = 0;
  const size_t valid = ValidPrefixLength(text, pos, &full_length);
  return valid == full_length ? full_length : 0;
}

char32_t Utf8Decode(std::string_view text, size_t pos, size_t length) {
  const auto b0 = static_cast<uint8_t>(text[pos]);
  if (length == 1) return b0;
  static constexpr uint8_t kLeadMask[] = {0, 0, 0x1F, 0x0F, 0x07};
  char32_t cp = b0 & kLeadMask[length];
  for (size_t i = 1; i < length; ++i) cp = (cp << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3F);
  return cp;
}

void Utf8Append(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t Utf8CompletePrefixLength(std::string_view bytes) {
  // An incomplete character is at most 3 bytes long: look at the last few
  // lead candidates only.
  const size_t first = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (size_t pos = bytes.size(); pos-- > first;) {
    const auto b = static_cast<uint8_t>(bytes[pos]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: its lead is further left
    size_t full_length = 0;
    const size_t valid = ValidPrefixLength(bytes, pos, &full_length);
    const bool incomplete = full_length > 1 && valid == bytes.size() - pos && valid < full_length;
    return incomplete ? pos : bytes.size();
  }
  return bytes.size();
}

bool IsValidUtf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = Utf8CharLength(text, pos);
    if (length == 0) return false;
    pos += length;
  }
  return true;
}

std::string Utf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t full_length = 0;
    const size_t valid = ValidPrefixLength(bytes, pos, &full_length);
    if (valid != 0 && valid == full_length) {
      out.append(bytes.substr(pos, valid));
      pos += valid;
    } else {
      out.append(kReplacementCharacter);
      pos += valid == 0 ? 1 : valid;
    }
  }
  return out;
}

}  // namespace inferno
