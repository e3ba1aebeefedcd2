// DType and TensorInfo: the element types a checkpoint may store and the
// description (name, dtype, shape) of one stored tensor, plus the conversion of
// stored elements to f32.
//
// Thread-safety: plain value types and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inferno {

enum class DType { kF32, kF16, kBF16 };

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  // Product of the shape (1 for a scalar). Precondition: the product fits in
  // int64 (checked when a file is parsed).
  int64_t num_elements() const;
};

// Bytes per element: 4 for F32, 2 for F16 and BF16.
int64_t DTypeSize(DType dtype);
// The safetensors spelling: "F32", "F16", "BF16".
std::string_view DTypeName(DType dtype);
// Inverse of DTypeName; nullopt for any other spelling.
std::optional<DType> ParseDType(std::string_view name);

// Converts `out.size()` little-endian elements of `dtype` starting at `src`
// (no alignment required) to f32.
void ConvertToF32(DType dtype, const std::byte* src, std::span<float> out);

// "[4, 8]" — for error messages.
std::string ShapeToString(const std::vector<int64_t>& shape);

}  // namespace inferno
