// DType: the element types a tensor may be stored in (by checkpoints, shard
// files and the kernels alike), their block sizes and names, and the
// conversions of stored elements to and from f32.
//
// F32, F16 and BF16 store one element per 4, 2, 2 bytes. The others are
// ggml's block formats: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL blocks of 32
// elements (tensor/quant_blocks.h), and the super-blocks of 256 of Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS (tensor/k_quant_blocks.h). A tensor is
// stored row-major and each row (its last dimension) is a whole number of
// blocks, so every row starts a block.
//
// Thread-safety: an enum and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/error.h"

namespace inferno {

enum class DType {
  kF32,
  kF16,
  kBF16,
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kIQ4_NL,
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kIQ4_XS,
};

// Every DType, in declaration order.
inline constexpr DType kAllDTypes[] = {DType::kF32,    DType::kF16,  DType::kBF16,  DType::kQ8_0,
                                       DType::kQ4_0,   DType::kQ4_1, DType::kQ5_0,  DType::kQ5_1,
                                       DType::kIQ4_NL, DType::kQ2_K, DType::kQ3_K,  DType::kQ4_K,
                                       DType::kQ5_K,   DType::kQ6_K, DType::kIQ4_XS};

// Elements per block: 1 for F32, F16, BF16; 32 for the block formats; 256
// for the super-block (K) formats.
int64_t DTypeBlockElements(DType dtype);
// Bytes per block: 4 for F32, 2 for F16 and BF16, sizeof the ggml block for
// the others (34 for Q8_0, 144 for Q4_K, ...).
int64_t DTypeBlockBytes(DType dtype);
// Bytes of `elements` consecutive elements (a row, or several whole rows).
// InvalidArgument when `elements` is negative or not a whole number of
// blocks, or the byte count overflows int64.
Result<int64_t> DTypeBytes(DType dtype, int64_t elements);
// The spelling in safetensors headers and shard manifests: "F32", "F16",
// "BF16", "Q8_0", "Q4_K", ... (ggml's names for the block types).
std::string_view DTypeName(DType dtype);
// Inverse of DTypeName; nullopt for any other spelling.
std::optional<DType> ParseDType(std::string_view name);
// "F32, F16, BF16, Q8_0, ..." (every DType) — for error messages.
std::string DTypeNames();

// Converts `out.size()` little-endian elements of `dtype` starting at `src`
// (no alignment required) to f32. For a block type `out.size()` must be a
// whole number of blocks starting at a block (CHECKed).
void ConvertToF32(DType dtype, const std::byte* src, std::span<float> out);

// Stores `values` as `DTypeBytes(dtype, values.size())` bytes of `dtype` at
// `dst` (no alignment required): F16 and BF16 round to nearest even, the
// block types quantize as ggml's reference quantizers (quantize_row_*_ref)
// do (IQ4_NL and IQ4_XS: as llama.cpp's model quantizer does, see
// tensor/k_quantizer.h). InvalidArgument when `values` is not a whole number
// of blocks, or (block types) holds a NaN or infinity, which no block can
// represent.
Status ConvertFromF32(DType dtype, std::span<const float> values, std::byte* dst);

}  // namespace inferno
