#include "tensor/k_quant_blocks.h"

#include <glog/logging.h>

#include "tensor/float16.h"
#include "tensor/quant_blocks.h"

namespace inferno {
namespace {

// Q2_K and Q3_K: element i is in half i / 128; within it, bits 2k, 2k + 1 (k
// = (i % 128) / 32) of byte (i % 32) of the half's 32 bytes of qs.
int TwoBitCode(const uint8_t* qs, int i) { return (qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3; }

// Q4_K and Q5_K: element i is in group i / 64 of 32 bytes of qs, byte i % 32,
// the low nibble for the group's first 32 elements, the high for the next.
int PackedNibble(const uint8_t* qs, int i) {
  const uint8_t byte = qs[32 * (i / 64) + i % 32];
  return (i / 32) % 2 == 0 ? byte & 0xf : byte >> 4;
}

template <typename Block, void (*Dequantize)(const Block&, float*)>
void DequantizeRow(std::span<const Block> blocks, std::span<float> out) {
  CHECK_EQ(out.size(), blocks.size() * kSuperBlockElements);
  for (size_t b = 0; b < blocks.size(); ++b) Dequantize(blocks[b], out.data() + b * kSuperBlockElements);
}

// Each computes ggml's expression for each element (the comments give it).
void DequantizeQ2_K(const BlockQ2_K& block, float* y) {
  const float d = HalfToFloat(block.d), dmin = HalfToFloat(block.dmin);
  for (int i = 0; i < kSuperBlockElements; ++i) {
    const uint8_t sc = block.scales[i / 16];
    const float dl = d * (sc & 0xf), ml = dmin * (sc >> 4);
    y[i] = dl * Q2KCode(block, i) - ml;  // dl * q - ml
  }
}

void DequantizeQ3_K(const BlockQ3_K& block, float* y) {
  const float d = HalfToFloat(block.d);
  int8_t scales[16];
  UnpackQ3KScales(block.scales, scales);
  for (int i = 0; i < kSuperBlockElements; ++i) {
    const float dl = d * scales[i / 16];
    y[i] = dl * Q3KCode(block, i);  // (d * (sc - 32)) * q
  }
}

void DequantizeQ4_K(const BlockQ4_K& block, float* y) {
  const float d = HalfToFloat(block.d), dmin = HalfToFloat(block.dmin);
  for (int i = 0; i < kSuperBlockElements; ++i) {
    uint8_t sc, m;
    UnpackScaleMinK4(block.scales, i / 32, sc, m);
    const float d1 = d * sc, m1 = dmin * m;
    y[i] = d1 * Q4KCode(block, i) - m1;
  }
}

void DequantizeQ5_K(const BlockQ5_K& block, float* y) {
  const float d = HalfToFloat(block.d), dmin = HalfToFloat(block.dmin);
  for (int i = 0; i < kSuperBlockElements; ++i) {
    uint8_t sc, m;
    UnpackScaleMinK4(block.scales, i / 32, sc, m);
    const float d1 = d * sc, m1 = dmin * m;
    y[i] = d1 * Q5KCode(block, i) - m1;
  }
}

void DequantizeQ6_K(const BlockQ6_K& block, float* y) {
  const float d = HalfToFloat(block.d);
  for (int i = 0; i < kSuperBlockElements; ++i) y[i] = d * block.scales[i / 16] * Q6KCode(block, i);
}

void DequantizeIQ4_XS(const BlockIQ4_XS& block, float* y) {
  const float d = HalfToFloat(block.d);
  for (int i = 0; i < kSuperBlockElements; ++i) {
    const float dl = d * IQ4XSScale(block, i / 32);
    y[i] = dl * kIq4NlValues[IQ4XSIndex(block, i)];
  }
}

}  // namespace

void UnpackScaleMinK4(const uint8_t packed[kPackedScaleBytes], int j, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = static_cast<uint8_t>((packed[j + 4] & 0xf) | ((packed[j - 4] >> 6) << 4));
    min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

void UnpackQ3KScales(const uint8_t packed[kPackedScaleBytes], int8_t scales[16]) {
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

int IQ4XSScale(const BlockIQ4_XS& block, int j) {
  const int low = (block.scales_l[j / 2] >> (4 * (j % 2))) & 0xf;
  const int high = (block.scales_h >> (2 * j)) & 3;
  return (low | (high << 4)) - 32;
}

int Q2KCode(const BlockQ2_K& block, int i) { return TwoBitCode(block.qs, i); }

int Q3KCode(const BlockQ3_K& block, int i) {
  // The hmask bit of element i: bit (i / 32) of byte i % 32 (m = 1, 2, 4, ...
  // across the 8 groups of 32 elements of both halves).
  const bool high = (block.hmask[i % 32] >> (i / 32)) & 1;
  return TwoBitCode(block.qs, i) - (high ? 0 : 4);
}

int Q4KCode(const BlockQ4_K& block, int i) { return PackedNibble(block.qs, i); }

int Q5KCode(const BlockQ5_K& block, int i) {
  return PackedNibble(block.qs, i) + (((block.qh[i % 32] >> (i / 32)) & 1) << 4);
}

int Q6KCode(const BlockQ6_K& block, int i) {
  // Half n = i / 128, quarter k = (i % 128) / 32, l = i % 32: the low 4 bits
  // are nibble k / 2 of ql[64 n + 32 (k % 2) + l], the high 2 bits bits 2k,
  // 2k + 1 of qh[32 n + l].
  const int n = i / 128, k = (i % 128) / 32, l = i % 32;
  const uint8_t low_byte = block.ql[64 * n + 32 * (k % 2) + l];
  const int low = k < 2 ? low_byte & 0xf : low_byte >> 4;
  const int high = (block.qh[32 * n + l] >> (2 * k)) & 3;
  return (low | (high << 4)) - 32;
}

int IQ4XSIndex(const BlockIQ4_XS& block, int i) {
  const uint8_t byte = block.qs[16 * (i / 32) + i % 16];
  return i % 32 < 16 ? byte & 0xf : byte >> 4;
}

void DequantizeRowQ2_K(std::span<const BlockQ2_K> blocks, std::span<float> out) {
  DequantizeRow<BlockQ2_K, DequantizeQ2_K>(blocks, out);
}
void DequantizeRowQ3_K(std::span<const BlockQ3_K> blocks, std::span<float> out) {
  DequantizeRow<BlockQ3_K, DequantizeQ3_K>(blocks, out);
}
void DequantizeRowQ4_K(std::span<const BlockQ4_K> blocks, std::span<float> out) {
  DequantizeRow<BlockQ4_K, DequantizeQ4_K>(blocks, out);
}
void DequantizeRowQ5_K(std::span<const BlockQ5_K> blocks, std::span<float> out) {
  DequantizeRow<BlockQ5_K, DequantizeQ5_K>(blocks, out);
}
void DequantizeRowQ6_K(std::span<const BlockQ6_K> blocks, std::span<float> out) {
  DequantizeRow<BlockQ6_K, DequantizeQ6_K>(blocks, out);
}
void DequantizeRowIQ4_XS(std::span<const BlockIQ4_XS> blocks, std::span<float> out) {
  DequantizeRow<BlockIQ4_XS, DequantizeIQ4_XS>(blocks, out);
}

}  // namespace inferno
