// ggml's block formats of 32 elements, bit-compatible with ggml's block_q8_0,
// block_q4_0, block_q4_1, block_q5_0, block_q5_1 and block_iq4_nl
// (ggml-common.h), so GGUF tensors and our shards hold the same bytes: a row
// of N elements (N a multiple of 32) is N/32 consecutive blocks, each f16
// scales followed by the block's 32 quantized values. With n(j) the 4-bit
// code of element j (j < 16: qs[j] & 0xf; j >= 16: qs[j - 16] >> 4) and
// h(j) bit j of the 32-bit little-endian qh:
//   Q8_0:   element j = qs[j] * d                         (34 bytes)
//   Q4_0:   element j = (n(j) - 8) * d                    (18 bytes)
//   Q4_1:   element j = n(j) * d + m                      (20 bytes)
//   Q5_0:   element j = ((n(j) | h(j) << 4) - 16) * d     (22 bytes)
//   Q5_1:   element j = (n(j) | h(j) << 4) * d + m        (24 bytes)
//   IQ4_NL: element j = d * kIq4NlValues[n(j)]            (18 bytes)
// The dequantizers compute exactly ggml's dequantize_row_* expressions (the
// same f32 operations in the same order), so their results are bit-equal.
// Quantizers round exactly as ggml's reference quantize_row_<type>_ref do
// (the ones llama.cpp's tools use to write model files without an
// importance matrix), so a tensor quantized here and there has the same
// bytes.
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

struct BlockQ4_1 {
  uint16_t d;  // f16 scale
  uint16_t m;  // f16 offset
  uint8_t qs[kQuantBlockElements / 2];
};
static_assert(sizeof(BlockQ4_1) == 20 && alignof(BlockQ4_1) == 2, "must match ggml's block_q4_1");

struct BlockQ5_0 {
  uint16_t d;     // f16 scale
  uint8_t qh[4];  // bit j: the fifth bit of element j
  uint8_t qs[kQuantBlockElements / 2];
};
static_assert(sizeof(BlockQ5_0) == 22 && alignof(BlockQ5_0) == 2, "must match ggml's block_q5_0");

struct BlockQ5_1 {
  uint16_t d;  // f16 scale
  uint16_t m;  // f16 offset
  uint8_t qh[4];
  uint8_t qs[kQuantBlockElements / 2];
};
static_assert(sizeof(BlockQ5_1) == 24 && alignof(BlockQ5_1) == 2, "must match ggml's block_q5_1");

struct BlockIQ4_NL {
  uint16_t d;  // f16 scale
  uint8_t qs[kQuantBlockElements / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18 && alignof(BlockIQ4_NL) == 2, "must match ggml's block_iq4_nl");

// The 16 values a 4-bit IQ4_NL or IQ4_XS code stands for (ggml's
// kvalues_iq4nl): a non-uniform grid, denser near zero.
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// The element of largest magnitude among x[0, n) (the first on ties; 0 when
// all are 0), its magnitude in `amax`: what ggml's quantizers scale by.
float LargestMagnitudeElement(const float* x, int n, float& amax);

// Element j's 4-bit code in a block of 32 (j < 16: the low nibble of qs[j],
// else the high nibble of qs[j - 16]), and its fifth bit from qh.
inline int BlockNibble(const uint8_t qs[kQuantBlockElements / 2], int j) {
  return j < 16 ? qs[j] & 0xf : qs[j - 16] >> 4;
}
inline int FifthBit(const uint8_t qh[4], int j) { return (qh[j / 8] >> (j % 8)) & 1; }

// Element j's code: the integer the block's scale multiplies.
inline int Q4_1Code(const BlockQ4_1& block, int j) { return BlockNibble(block.qs, j); }  // [0, 15]
inline int Q5_0Code(const BlockQ5_0& block, int j) {                                     // [-16, 15]
  return (BlockNibble(block.qs, j) | FifthBit(block.qh, j) << 4) - 16;
}
inline int Q5_1Code(const BlockQ5_1& block, int j) {
  return BlockNibble(block.qs, j) | FifthBit(block.qh, j) << 4;
}
inline int IQ4_NLCode(const BlockIQ4_NL& block, int j) { return kIq4NlValues[BlockNibble(block.qs, j)]; }

// Quantizes `x` (x.size() == 32 * out.size()) into `out` as ggml's
// quantize_row_<type>_ref does. Q8_0: d = max|x|/127 (rounded to f16), qs =
// round-half-away(x / (max|x|/127)). Q4_0 and Q5_0: with m the element of
// largest magnitude (the first one on ties), d = m / -8 (-16), and each
// element's code = min(15 (31), trunc(x / d + 8.5 (16.5))). Q4_1 and Q5_1:
// m = min x, d = (max x - m) / 15 (31), code = trunc((x - m) / d + 0.5)
// (at most 15 for Q4_1). The divisions use the f32 d, stored rounded to
// f16. An all-zero block gets d = 0. IQ4_NL's quantizer searches for its
// scale: see tensor/k_quantizer.h.
// Preconditions (CHECKed): the sizes match; x holds finite values.
void QuantizeRowQ8_0(std::span<const float> x, std::span<BlockQ8_0> out);
void QuantizeRowQ4_0(std::span<const float> x, std::span<BlockQ4_0> out);
void QuantizeRowQ4_1(std::span<const float> x, std::span<BlockQ4_1> out);
void QuantizeRowQ5_0(std::span<const float> x, std::span<BlockQ5_0> out);
void QuantizeRowQ5_1(std::span<const float> x, std::span<BlockQ5_1> out);

// The values a block holds, in f32 (out.size() == 32 * blocks.size(), CHECKed).
void DequantizeRowQ8_0(std::span<const BlockQ8_0> blocks, std::span<float> out);
void DequantizeRowQ4_0(std::span<const BlockQ4_0> blocks, std::span<float> out);
void DequantizeRowQ4_1(std::span<const BlockQ4_1> blocks, std::span<float> out);
void DequantizeRowQ5_0(std::span<const BlockQ5_0> blocks, std::span<float> out);
void DequantizeRowQ5_1(std::span<const BlockQ5_1> blocks, std::span<float> out);
void DequantizeRowIQ4_NL(std::span<const BlockIQ4_NL> blocks, std::span<float> out);

}  // namespace inferno
