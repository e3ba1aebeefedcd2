#include "tensor/quant_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <glog/logging.h>

#include "tensor/float16.h"

namespace inferno {

namespace {

// The element of largest magnitude in a block of 32, as Q4_0 and Q5_0 scale
// by it. Precondition (CHECKed): the block is finite.
float SignedAbsMax(const float* v, const char* type) {
  for (int j = 0; j < kQuantBlockElements; ++j) {
    CHECK(std::isfinite(v[j])) << type << " quantization of a non-finite value";
  }
  float amax;
  return LargestMagnitudeElement(v, kQuantBlockElements, amax);
}

// The smallest and largest element of a block of 32, as Q4_1 and Q5_1
// offset and scale by them.
void MinMax(const float* v, const char* type, float& min, float& max) {
  min = std::numeric_limits<float>::max();
  max = -std::numeric_limits<float>::max();
  for (int j = 0; j < kQuantBlockElements; ++j) {
    CHECK(std::isfinite(v[j])) << type << " quantization of a non-finite value";
    min = std::min(min, v[j]);
    max = std::max(max, v[j]);
  }
}

// Stores 5-bit codes: the low nibbles in qs (element j < 16 low, j + 16
// high), the fifth bits in qh (bit j of a little-endian uint32).
template <typename Block>
void PackFiveBitCodes(const int codes[kQuantBlockElements], Block& block) {
  constexpr int kHalf = kQuantBlockElements / 2;
  uint32_t high = 0;
  for (int j = 0; j < kHalf; ++j) {
    block.qs[j] = static_cast<uint8_t>((codes[j] & 0xf) | ((codes[j + kHalf] & 0xf) << 4));
    high |= static_cast<uint32_t>((codes[j] >> 4) & 1) << j;
    high |= static_cast<uint32_t>((codes[j + kHalf] >> 4) & 1) << (j + kHalf);
  }
  std::memcpy(block.qh, &high, sizeof high);
}

}  // namespace

float LargestMagnitudeElement(const float* x, int n, float& amax) {
  float extreme = 0.0f;
  amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      extreme = x[i];
    }
  }
  return extreme;
}

void QuantizeRowQ8_0(std::span<const float> x, std::span<BlockQ8_0> out) {
  CHECK_EQ(x.size(), out.size() * kQuantBlockElements);
  for (size_t b = 0; b < out.size(); ++b) {
    const float* v = x.data() + b * kQuantBlockElements;
    float amax = 0.0f;
    for (int j = 0; j < kQuantBlockElements; ++j) {
      CHECK(std::isfinite(v[j])) << "Q8_0 quantization of a non-finite value";
      amax = std::max(amax, std::fabs(v[j]));
    }
    // The f32 scale, not its f16 rounding, divides the values (as in ggml).
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = FloatToHalf(d);
    for (int j = 0; j < kQuantBlockElements; ++j) {
      out[b].qs[j] = static_cast<int8_t>(std::round(v[j] * inverse));
    }
  }
}

void QuantizeRowQ4_0(std::span<const float> x, std::span<BlockQ4_0> out) {
  CHECK_EQ(x.size(), out.size() * kQuantBlockElements);
  constexpr int kHalf = kQuantBlockElements / 2;
  for (size_t b = 0; b < out.size(); ++b) {
    const float* v = x.data() + b * kQuantBlockElements;
    const float d = SignedAbsMax(v, "Q4_0") / -8.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = FloatToHalf(d);
    for (int j = 0; j < kHalf; ++j) {
      // x / d lies in [-8, 8], so the truncated code is in [0, 16]; 16 (the
      // element opposite in sign to `extreme` at its magnitude) becomes 15.
      const int low = std::min(15, static_cast<int>(v[j] * inverse + 8.5f));
      const int high = std::min(15, static_cast<int>(v[j + kHalf] * inverse + 8.5f));
      out[b].qs[j] = static_cast<uint8_t>(low | (high << 4));
    }
  }
}

void QuantizeRowQ4_1(std::span<const float> x, std::span<BlockQ4_1> out) {
  CHECK_EQ(x.size(), out.size() * kQuantBlockElements);
  constexpr int kHalf = kQuantBlockElements / 2;
  for (size_t b = 0; b < out.size(); ++b) {
    const float* v = x.data() + b * kQuantBlockElements;
    float min, max;
    MinMax(v, "Q4_1", min, max);
    const float d = (max - min) / 15.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = FloatToHalf(d);
    out[b].m = FloatToHalf(min);
    for (int j = 0; j < kHalf; ++j) {
      // (x - min) / d lies in [0, 15] up to rounding; + 0.5 and truncation
      // round it to nearest.
      const int low = std::min(15, static_cast<int>((v[j] - min) * inverse + 0.5f));
      const int high = std::min(15, static_cast<int>((v[j + kHalf] - min) * inverse + 0.5f));
      out[b].qs[j] = static_cast<uint8_t>(low | (high << 4));
    }
  }
}

void QuantizeRowQ5_0(std::span<const float> x, std::span<BlockQ5_0> out) {
  CHECK_EQ(x.size(), out.size() * kQuantBlockElements);
  for (size_t b = 0; b < out.size(); ++b) {
    const float* v = x.data() + b * kQuantBlockElements;
    const float d = SignedAbsMax(v, "Q5_0") / -16.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = FloatToHalf(d);
    int codes[kQuantBlockElements];
    for (int j = 0; j < kQuantBlockElements; ++j) {
      codes[j] = std::min(31, static_cast<int>(v[j] * inverse + 16.5f));
    }
    PackFiveBitCodes(codes, out[b]);
  }
}

void QuantizeRowQ5_1(std::span<const float> x, std::span<BlockQ5_1> out) {
  CHECK_EQ(x.size(), out.size() * kQuantBlockElements);
  for (size_t b = 0; b < out.size(); ++b) {
    const float* v = x.data() + b * kQuantBlockElements;
    float min, max;
    MinMax(v, "Q5_1", min, max);
    const float d = (max - min) / 31.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = FloatToHalf(d);
    out[b].m = FloatToHalf(min);
    int codes[kQuantBlockElements];
    // ggml clamps nothing here: (x - min) / d + 0.5 stays below 32.
    for (int j = 0; j < kQuantBlockElements; ++j) codes[j] = static_cast<int>((v[j] - min) * inverse + 0.5f);
    PackFiveBitCodes(codes, out[b]);
  }
}

void DequantizeRowQ8_0(std::span<const BlockQ8_0> blocks, std::span<float> out) {
  CHECK_EQ(out.size(), blocks.size() * kQuantBlockElements);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const float d = HalfToFloat(blocks[b].d);
    for (int j = 0; j < kQuantBlockElements; ++j) out[b * kQuantBlockElements + j] = blocks[b].qs[j] * d;
  }
}

void DequantizeRowQ4_0(std::span<const BlockQ4_0> blocks, std::span<float> out) {
  CHECK_EQ(out.size(), blocks.size() * kQuantBlockElements);
  constexpr int kHalf = kQuantBlockElements / 2;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* o = out.data() + b * kQuantBlockElements;
    for (int j = 0; j < kHalf; ++j) {
      o[j] = ((blocks[b].qs[j] & 0xf) - 8) * d;
      o[j + kHalf] = ((blocks[b].qs[j] >> 4) - 8) * d;
    }
  }
}

void DequantizeRowQ4_1(std::span<const BlockQ4_1> blocks, std::span<float> out) {
  CHECK_EQ(out.size(), blocks.size() * kQuantBlockElements);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const float d = HalfToFloat(blocks[b].d);
    const float m = HalfToFloat(blocks[b].m);
    float* o = out.data() + b * kQuantBlockElements;
    for (int j = 0; j < kQuantBlockElements; ++j) o[j] = Q4_1Code(blocks[b], j) * d + m;
  }
}

void DequantizeRowQ5_0(std::span<const BlockQ5_0> blocks, std::span<float> out) {
  CHECK_EQ(out.size(), blocks.size() * kQuantBlockElements);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* o = out.data() + b * kQuantBlockElements;
    for (int j = 0; j < kQuantBlockElements; ++j) o[j] = Q5_0Code(blocks[b], j) * d;
  }
}

void DequantizeRowQ5_1(std::span<const BlockQ5_1> blocks, std::span<float> out) {
  CHECK_EQ(out.size(), blocks.size() * kQuantBlockElements);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const float d = HalfToFloat(blocks[b].d);
    const float m = HalfToFloat(blocks[b].m);
    float* o = out.data() + b * kQuantBlockElements;
    for (int j = 0; j < kQuantBlockElements; ++j) o[j] = Q5_1Code(blocks[b], j) * d + m;
  }
}

void DequantizeRowIQ4_NL(std::span<const BlockIQ4_NL> blocks, std::span<float> out) {
  CHECK_EQ(out.size(), blocks.size() * kQuantBlockElements);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* o = out.data() + b * kQuantBlockElements;
    for (int j = 0; j < kQuantBlockElements; ++j) o[j] = d * IQ4_NLCode(blocks[b], j);
  }
}

}  // namespace inferno
