#include "tensor/quant_blocks.h"

#include <algorithm>
#include <cmath>

#include <glog/logging.h>

#include "tensor/float16.h"

namespace inferno {

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
    float amax = 0.0f, extreme = 0.0f;
    for (int j = 0; j < kQuantBlockElements; ++j) {
      CHECK(std::isfinite(v[j])) << "Q4_0 quantization of a non-finite value";
      if (std::fabs(v[j]) > amax) {
        amax = std::fabs(v[j]);
        extreme = v[j];
      }
    }
    const float d = extreme / -8.0f;
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
