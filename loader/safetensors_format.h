// The safetensors file format, in one place: its layout, the header parser
// every reader goes through, and the header encoder every writer uses.
//
//   bytes [0, 8)          N, the header length: uint64, little-endian
//   bytes [8, 8 + N)      the header: a UTF-8 JSON object; writers pad it with
//                         spaces so that the data starts at a multiple of 8
//   bytes [8 + N, end)    the data: every tensor's bytes, row-major,
//                         little-endian, concatenated without gaps or overlaps
//
//   header = {"__metadata__": {"key": "value", ...},             (optional)
//             "<tensor name>": {"dtype": "F32" | "F16" | "BF16",
//                               "shape": [d0, d1, ...],
//                               "data_offsets": [begin, end]},  (relative to 8 + N)
//             ...}
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "tensor/tensor_info.h"

namespace inferno {

inline constexpr uint64_t kSafetensorsLengthBytes = 8;
// Headers above this size are rejected before anything is allocated for them.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100ull << 20;
inline constexpr uint64_t kSafetensorsAlignment = 8;
inline constexpr char kSafetensorsMetadataKey[] = "__metadata__";

struct SafetensorsEntry {
  TensorInfo info;
  // Absolute byte range [begin, end) of the tensor's data in the file.
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;  // in data order
  std::map<std::string, std::string> metadata;
  uint64_t data_begin = 0;  // 8 + N
};

// Parses and validates the header of the safetensors file whose complete
// contents are `file`. Fails, naming `source`, the tensor and the offending
// value, on: a file shorter than its header; a header that is not a JSON
// object; duplicate or empty names or names holding NUL; an unknown dtype; a
// malformed shape or data_offsets; a byte length that differs from
// shape x dtype size (computed without overflow); offsets out of the data
// section, overlapping, or leaving gaps.
Result<SafetensorsHeader> ParseSafetensorsHeader(std::span<const std::byte> file, const std::string& source);

// The first bytes of a safetensors file holding `tensors`, in that order and
// without gaps: the 8-byte length and the space-padded JSON header. The data
// of tensors[i] must follow at offset sum of the previous tensors' sizes.
// Precondition: names are unique, non-empty and valid UTF-8.
std::string EncodeSafetensorsHeader(const std::vector<TensorInfo>& tensors,
                                    const std::map<std::string, std::string>& metadata);

// Bytes of one tensor's data (StoredBytes). Precondition (CHECKed): its rows
// are whole blocks of its dtype and the size fits int64, as for every tensor
// ParseSafetensorsHeader returns.
uint64_t TensorByteSize(const TensorInfo& tensor);

}  // namespace inferno
