// ggml's super-block ("K-quant") formats, bit-compatible with ggml's
// block_q2_K, block_q3_K, block_q4_K, block_q5_K, block_q6_K and block_iq4_xs
// (ggml-common.h): a row of N elements (N a multiple of 256) is N/256
// consecutive super-blocks, each of 256 elements in sub-blocks of 16 or 32
// that share the super-block's f16 scale `d` (and `dmin`) through small
// integer sub-block scales (and mins):
//   Q2_K   (84 bytes, 2.625 bits/weight): 16 sub-blocks of 16, 2-bit codes q;
//          element = d * sc - dmin * m with sc, m 4-bit per sub-block.
//   Q3_K  (110 bytes, 3.4375): 16 sub-blocks of 16, 3-bit codes (2 low bits in
//          qs, the third in hmask, q in [-4, 3]); element = d * (sc - 32) * q,
//          sc 6-bit.
//   Q4_K  (144 bytes, 4.5): 8 sub-blocks of 32, 4-bit codes;
//          element = d * sc * q - dmin * m, sc and m 6-bit.
//   Q5_K  (176 bytes, 5.5): as Q4_K with a fifth bit per code in qh.
//   Q6_K  (210 bytes, 6.5625): 16 sub-blocks of 16, 6-bit codes (4 low bits
//          in ql, 2 high in qh, q in [-32, 31]); element = d * sc * q, sc int8.
//   IQ4_XS (136 bytes, 4.25): 8 sub-blocks of 32, 4-bit indices into
//          kIq4NlValues; element = d * (sc - 32) * value, sc 6-bit.
// Where each code and scale of element i sits is given by the accessors
// below (KQuantLayout), which the dequantizers and the kernels share. The
// dequantizers compute exactly ggml's dequantize_row_* expressions, so their
// results are bit-equal.
//
// Thread-safety: plain structs and pure functions.
#pragma once

#include <cstdint>
#include <span>

namespace inferno {

inline constexpr int kSuperBlockElements = 256;
// ggml's K_SCALE_SIZE: the 12 bytes holding 8 6-bit scales and 8 6-bit mins
// (Q4_K, Q5_K) or 16 6-bit scales (Q3_K).
inline constexpr int kPackedScaleBytes = 12;

struct BlockQ2_K {
  uint8_t scales[16];  // sub-block i: scale in bits 0-3, min in bits 4-7
  uint8_t qs[64];      // 2-bit codes
  uint16_t d;          // f16 super-block scale of the scales
  uint16_t dmin;       // f16 super-block scale of the mins
};
static_assert(sizeof(BlockQ2_K) == 84, "must match ggml's block_q2_K");

struct BlockQ3_K {
  uint8_t hmask[32];  // the third bit of each code (set: q >= 0)
  uint8_t qs[64];     // the low 2 bits of each code
  uint8_t scales[kPackedScaleBytes];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110, "must match ggml's block_q3_K");

struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kPackedScaleBytes];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_K) == 144, "must match ggml's block_q4_K");

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kPackedScaleBytes];
  uint8_t qh[32];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176, "must match ggml's block_q5_K");

struct BlockQ6_K {
  uint8_t ql[128];    // the low 4 bits of each code
  uint8_t qh[64];     // the high 2 bits
  int8_t scales[16];  // one per sub-block of 16
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210, "must match ggml's block_q6_K");

struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;    // bits 2i, 2i+1: the high 2 bits of sub-block i's scale
  uint8_t scales_l[4];  // nibble i: the low 4 bits of sub-block i's scale
  uint8_t qs[128];
};
static_assert(sizeof(BlockIQ4_XS) == 136, "must match ggml's block_iq4_xs");

// Internal to the accessors below.
namespace k_quant_internal {

// Q2_K and Q3_K: element i is in half i / 128; within it, bits 2k, 2k + 1 (k
// = (i % 128) / 32) of byte (i % 32) of the half's 32 bytes of qs.
inline int TwoBitCode(const uint8_t* qs, int i) {
  return (qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
}

// Q4_K and Q5_K: element i is in group i / 64 of 32 bytes of qs, byte i % 32,
// the low nibble for the group's first 32 elements, the high for the next.
inline int PackedNibble(const uint8_t* qs, int i) {
  const uint8_t byte = qs[32 * (i / 64) + i % 32];
  return (i / 32) % 2 == 0 ? byte & 0xf : byte >> 4;
}

}  // namespace k_quant_internal

// Sub-block j's (j < 8) 6-bit scale and min from the 12 packed bytes of a
// Q4_K or Q5_K super-block (ggml's get_scale_min_k4).
inline void UnpackScaleMinK4(const uint8_t packed[kPackedScaleBytes], int j, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = static_cast<uint8_t>((packed[j + 4] & 0xf) | ((packed[j - 4] >> 6) << 4));
    min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

// The 16 sub-block scales of a Q3_K super-block, each its 6-bit field minus
// 32, in [-32, 31].
inline void UnpackQ3KScales(const uint8_t packed[kPackedScaleBytes], int8_t scales[16]) {
  // Scale j: its low 4 bits are a nibble of bytes 0-7 (j / 4 = 0: low
  // nibbles of bytes 0-3; 1: of bytes 4-7; 2, 3: their high nibbles), its
  // high 2 bits bits 2 (j / 4), 2 (j / 4) + 1 of byte 8 + j % 4.
  for (int j = 0; j < 16; ++j) {
    const int group = j / 4, k = j % 4;
    const uint8_t byte = packed[(group % 2) * 4 + k];
    const int low = group < 2 ? byte & 0xf : byte >> 4;
    const int high = (packed[8 + k] >> (2 * group)) & 3;
    scales[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

// Sub-block j's (j < 8) scale of an IQ4_XS super-block, its 6-bit field minus
// 32.
inline int IQ4XSScale(const BlockIQ4_XS& block, int j) {
  const int low = (block.scales_l[j / 2] >> (4 * (j % 2))) & 0xf;
  const int high = (block.scales_h >> (2 * j)) & 3;
  return (low | (high << 4)) - 32;
}

// Where the code of element i of a super-block sits: every format but IQ4_XS
// lays a super-block out in two halves of 128 elements; the accessors below
// give element i's code (Q3_K, Q6_K: signed, the offset taken off) so that
// the dequantizers, quantizers and kernels read one layout.
inline int Q2KCode(const BlockQ2_K& block, int i) { return k_quant_internal::TwoBitCode(block.qs, i); }

inline int Q3KCode(const BlockQ3_K& block, int i) {
  // The hmask bit of element i: bit (i / 32) of byte i % 32 (m = 1, 2, 4, ...
  // across the 8 groups of 32 elements of both halves).
  const bool high = (block.hmask[i % 32] >> (i / 32)) & 1;
  return k_quant_internal::TwoBitCode(block.qs, i) - (high ? 0 : 4);
}

inline int Q4KCode(const BlockQ4_K& block, int i) { return k_quant_internal::PackedNibble(block.qs, i); }

inline int Q5KCode(const BlockQ5_K& block, int i) {
  return k_quant_internal::PackedNibble(block.qs, i) + (((block.qh[i % 32] >> (i / 32)) & 1) << 4);
}

inline int Q6KCode(const BlockQ6_K& block, int i) {
  // Half n = i / 128, quarter k = (i % 128) / 32, l = i % 32: the low 4 bits
  // are nibble k / 2 of ql[64 n + 32 (k % 2) + l], the high 2 bits bits 2k,
  // 2k + 1 of qh[32 n + l].
  const int n = i / 128, k = (i % 128) / 32, l = i % 32;
  const uint8_t low_byte = block.ql[64 * n + 32 * (k % 2) + l];
  const int low = k < 2 ? low_byte & 0xf : low_byte >> 4;
  const int high = (block.qh[32 * n + l] >> (2 * k)) & 3;
  return (low | (high << 4)) - 32;
}

inline int IQ4XSIndex(const BlockIQ4_XS& block, int i) {
  const uint8_t byte = block.qs[16 * (i / 32) + i % 16];
  return i % 32 < 16 ? byte & 0xf : byte >> 4;
}

// The values a row of super-blocks holds, in f32 (out.size() == 256 *
// blocks.size(), CHECKed).
void DequantizeRowQ2_K(std::span<const BlockQ2_K> blocks, std::span<float> out);
void DequantizeRowQ3_K(std::span<const BlockQ3_K> blocks, std::span<float> out);
void DequantizeRowQ4_K(std::span<const BlockQ4_K> blocks, std::span<float> out);
void DequantizeRowQ5_K(std::span<const BlockQ5_K> blocks, std::span<float> out);
void DequantizeRowQ6_K(std::span<const BlockQ6_K> blocks, std::span<float> out);
void DequantizeRowIQ4_XS(std::span<const BlockIQ4_XS> blocks, std::span<float> out);

}  // namespace inferno
