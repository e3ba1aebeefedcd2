// The ggml block formats Q8_0 and Q4_0, bit-compatible with ggml's block_q8_0
// and block_q4_0 (ggml-common.h), so GGUF tensors and our shards hold the same
// bytes: a row of N elements (N a multiple of 32) is N/32 consecutive blocks,
// each an f16 scale `d` followed by the block's 32 quantized values.
//   Q8_0: element j = qs[j] * d                       (34 bytes per block)
//   Q4_0: element j < 16 = ((qs[j] & 0xf) - 8) * d,    (18 bytes per block)
//         element j + 16 = ((qs[j] >> 4) - 8) * d
// Quantizers round exactly as ggml's reference quantize_row_q8_0_ref and
// quantize_row_q4_0_ref do (the ones llama.cpp's tools use to write model
// files), so a tensor quantized here and there has the same bytes.
//
// Thread-safety: plain structs and pure functions.
#pragma once

#include <cstdint>
#include <span>

namespace inferno {

inline constexpr int kQuantBlockElements = 32;

struct BlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t qs[kQuantBlockElements];
};
static_assert(sizeof(BlockQ8_0) == 34 && alignof(BlockQ8_0) == 2, "must match ggml's block_q8_0");

struct BlockQ4_0 {
  uint16_t d;  // f16 scale
  uint8_t qs[kQuantBlockElements / 2];
};
static_assert(sizeof(BlockQ4_0) == 18 && alignof(BlockQ4_0) == 2, "must match ggml's block_q4_0");

// Quantizes `x` (x.size() == 32 * out.size()) into `out`. Q8_0: d = max|x|/127
// (rounded to f16), qs = round-half-away(x / (max|x|/127)). Q4_0: with m the
// element of largest magnitude (the first one on ties), d = m / -8, and each
// element's code = min(15, trunc(x / d + 8.5)). An all-zero block gets d = 0.
// Preconditions (CHECKed): the sizes match; x holds finite values.
void QuantizeRowQ8_0(std::span<const float> x, std::span<BlockQ8_0> out);
void QuantizeRowQ4_0(std::span<const float> x, std::span<BlockQ4_0> out);

// The values a block holds, in f32 (out.size() == 32 * blocks.size(), CHECKed).
void DequantizeRowQ8_0(std::span<const BlockQ8_0> blocks, std::span<float> out);
void DequantizeRowQ4_0(std::span<const BlockQ4_0> blocks, std::span<float> out);

}  // namespace inferno
