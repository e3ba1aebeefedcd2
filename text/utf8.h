// UTF-8 helpers shared by the tokenizer's stages: walking code points,
// appending them, and finding where complete characters end so streamed
// output never splits one.
//
// Thread-safety: free functions without state.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace inferno {

// Length in bytes of the well-formed UTF-8 character starting at text[pos],
// or 0 when the bytes there are not one (a stray continuation byte, a
// truncated or overlong sequence, a surrogate, a value above U+10FFFF).
// Precondition: pos < text.size().
size_t Utf8CharLength(std::string_view text, size_t pos);

// The code point of the well-formed character of `length` bytes at text[pos]
// (length from Utf8CharLength, nonzero).
char32_t Utf8Decode(std::string_view text, size_t pos, size_t length);

// Appends the UTF-8 encoding of `code_point` (at most U+10FFFF) to `out`.
void Utf8Append(char32_t code_point, std::string& out);

// How many leading bytes of `bytes` to print now so that a character is never
// split: everything except a trailing sequence that is a valid beginning of
// a character still missing its last bytes. Invalid bytes are not held back.
size_t Utf8CompletePrefixLength(std::string_view bytes);

// Whether `text` is entirely well-formed UTF-8.
bool IsValidUtf8(std::string_view text);

// `bytes` with every maximal invalid subsequence replaced by U+FFFD, as
// Rust's String::from_utf8_lossy and the WHATWG decoder do.
std::string Utf8Lossy(std::string_view bytes);

}  // namespace inferno
