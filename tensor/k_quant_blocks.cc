#include "tensor/k_quant_blocks.h"

#include <glog/logging.h>

#include "tensor/float16.h"
#include "tensor/quant_blocks.h"

namespace inferno {
namespace {

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

// Q4_K and Q5_K: the same scales and mins, codes of 4 or 5 bits.
template <typename Block, int (*Code)(const Block&, int)>
void DequantizeScaleMinK4(const Block& block, float* y) {
  const float d = HalfToFloat(block.d), dmin = HalfToFloat(block.dmin);
  for (int i = 0; i < kSuperBlockElements; ++i) {
    uint8_t sc, m;
    UnpackScaleMinK4(block.scales, i / 32, sc, m);
    const float d1 = d * sc, m1 = dmin * m;
    y[i] = d1 * Code(block, i) - m1;
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

void DequantizeRowQ2_K(std::span<const BlockQ2_K> blocks, std::span<float> out) {
  DequantizeRow<BlockQ2_K, DequantizeQ2_K>(blocks, out);
}
void DequantizeRowQ3_K(std::span<const BlockQ3_K> blocks, std::span<float> out) {
  DequantizeRow<BlockQ3_K, DequantizeQ3_K>(blocks, out);
}
void DequantizeRowQ4_K(std::span<const BlockQ4_K> blocks, std::span<float> out) {
  DequantizeRow<BlockQ4_K, DequantizeScaleMinK4<BlockQ4_K, Q4KCode>>(blocks, out);
}
void DequantizeRowQ5_K(std::span<const BlockQ5_K> blocks, std::span<float> out) {
  DequantizeRow<BlockQ5_K, DequantizeScaleMinK4<BlockQ5_K, Q5KCode>>(blocks, out);
}
void DequantizeRowQ6_K(std::span<const BlockQ6_K> blocks, std::span<float> out) {
  DequantizeRow<BlockQ6_K, DequantizeQ6_K>(blocks, out);
}
void DequantizeRowIQ4_XS(std::span<const BlockIQ4_XS> blocks, std::span<float> out) {
  DequantizeRow<BlockIQ4_XS, DequantizeIQ4_XS>(blocks, out);
}

}  // namespace inferno
