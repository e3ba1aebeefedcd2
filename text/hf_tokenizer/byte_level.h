// The byte-level alphabet of GPT-2 style BPE (ByteLevel pre-tokenizer and
// decoder): each of the 256 byte values stands for one printable code point
// (printable Latin-1 bytes for themselves, the others for U+0100 onwards), so
// vocabulary entries are text while the model works on raw bytes.
//
// Thread-safety: free functions over constant tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace inferno::hf {

// The code point that stands for `byte`.
char32_t ByteLevelCharOf(uint8_t byte);

// The bytes a byte-level string stands for, or nullopt when `text` holds a
// character outside the alphabet (or is not UTF-8).
std::optional<std::string> ByteLevelToBytes(std::string_view text);

}  // namespace inferno::hf
