// The GGUF file format (llama.cpp's, versions 2 and 3, little-endian), in
// one place: its constants, the parser every reader goes through and the
// encoder every writer uses.
//
//   uint32 magic "GGUF", uint32 version, uint64 tensor_count, uint64 kv_count
//   kv_count  x { string key, uint32 value_type, value }
//   tensor_count x { string name, uint32 n_dims, uint64 ne[n_dims],
//                    uint32 ggml_type, uint64 offset }
//   zero padding to `alignment` (general.alignment, a uint32; default 32)
//   the data section: tensor i at data_begin + offset_i, offsets multiples of
//   the alignment, each tensor padded with zeros to the alignment
//
//   string = uint64 length, bytes (no terminator)
//   value  = a scalar of value_type, a string, or an array:
//            uint32 element_type, uint64 count, count x value (not arrays)
//
// Dimensions are stored fastest-first: ne[0] is the length of a row, so a
// (rows, columns) matrix is stored with ne = {columns, rows}. The quantized
// types are ggml's blocks along the row, of 32 elements
// (tensor/quant_blocks.h) or super-blocks of 256 (tensor/k_quant_blocks.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/error.h"
#include "tensor/tensor_info.h"

namespace inferno {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
inline constexpr uint32_t kGgufVersion = 3;         // written; 2 (the same layout) is also read
inline constexpr uint32_t kGgufOldestReadVersion = 2;
inline constexpr uint64_t kGgufHeaderBytes = 4 + 4 + 8 + 8;
inline constexpr char kGgufAlignmentKey[] = "general.alignment";
inline constexpr uint64_t kGgufDefaultAlignment = 32;
// ggml's limits, which llama.cpp enforces on read.
inline constexpr uint32_t kGgmlMaxDims = 4;
inline constexpr uint64_t kGgmlMaxNameBytes = 63;

enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// The ggml tensor types inferno reads (ggml.h's enum ggml_type values).
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
};
inline constexpr GgmlType kGgmlSupportedTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,   GgmlType::kQ4_0,
    GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K,   GgmlType::kQ3_K,
    GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

// The DType holding a ggml type's elements (tensor_info.h: the same bytes,
// block layouts bit-compatible with ggml's).
DType GgmlTypeDType(GgmlType type);
// The ggml type of a DType.
GgmlType DTypeGgmlType(DType dtype);

// ggml's name of any ggml_type value ("Q4_K", "F32"), or "unknown type 77".
std::string GgmlTypeName(uint32_t type);

// One metadata value: a scalar (`values` holds one element) or an array of
// `element_type` (`values` holds its elements). Integers of every width are
// held as int64_t (signed types) or uint64_t (unsigned), floats as double.
struct GgufValue {
  using Scalar = std::variant<uint64_t, int64_t, double, bool, std::string>;
  GgufValueType type = GgufValueType::kUint32;
  GgufValueType element_type = GgufValueType::kUint32;  // arrays: of the elements; scalars: = type
  std::vector<Scalar> values;

  bool is_array() const { return type == GgufValueType::kArray; }
  // A scalar integer of any width that fits int64; nullopt for other values.
  std::optional<int64_t> AsInt() const;
  // A scalar float32 or float64; nullopt for other values.
  std::optional<double> AsFloat() const;
  // A scalar string; nullptr for other values.
  const std::string* AsString() const;
  // "uint32", "array of string", ... for error messages.
  std::string TypeName() const;

  bool operator==(const GgufValue&) const = default;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> ne;  // fastest-first: ne[0] is the row length
};

struct GgufTensor {
  GgufTensorInfo info;
  // Absolute byte range [begin, end) of the tensor's data in the file
  // (without its padding).
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct GgufFile {
  uint32_t version = kGgufVersion;
  std::vector<GgufKeyValue> metadata;  // in file order, keys unique
  std::vector<GgufTensor> tensors;     // in file order = data order
  uint64_t alignment = kGgufDefaultAlignment;
  uint64_t data_begin = 0;

  // The value of `key`, or nullptr.
  const GgufValue* Find(std::string_view key) const;
};

// Parses and validates the GGUF file whose complete contents are `file`.
// Every failure is one line naming `source`, the byte offset and the fault:
// a bad magic or version; counts, string or array lengths that exceed the
// bytes left; an unknown value type or a nested array; a bool other than 0
// or 1; duplicate or empty keys; a general.alignment that is not a uint32
// power of two; tensor names empty, duplicate or longer than 63 bytes; more
// than 4 or negative dimensions, element counts that overflow, a row length
// not a multiple of the block; a ggml type not in kGgmlSupportedTypes
// (Unimplemented, naming the tensor and the type); offsets not aligned, out
// of the file, overlapping or out of order or leaving gaps; trailing bytes
// beyond the last tensor's padding.
Result<GgufFile> ParseGgufFile(std::span<const std::byte> file, const std::string& source);

// Bytes of a tensor's data (without padding). Precondition: ne[0] is a
// multiple of the type's block and the size fits uint64 (as ParseGgufFile
// checks).
uint64_t GgufTensorBytes(const GgufTensorInfo& tensor);
// `bytes` rounded up to a multiple of `alignment`.
uint64_t GgufPadded(uint64_t bytes, uint64_t alignment);

// Everything of a GGUF file before the data section: the header, `metadata`
// in order, the tensor infos with offsets laid out in order (each tensor
// padded to `alignment`), and the padding up to the data section. The data
// of tensor i then follows at its offset: write each tensor's bytes followed
// by GgufPadded(size) - size zero bytes. `alignment` must be a power of two
// and equal general.alignment when `metadata` has it (32 otherwise).
std::string EncodeGgufHeader(const std::vector<GgufKeyValue>& metadata,
                             const std::vector<GgufTensorInfo>& tensors, uint64_t alignment);

}  // namespace inferno
