#include "tensor/k_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <glog/logging.h>

#include "tensor/float16.h"

namespace inferno {
namespace {

// Below this largest magnitude a group counts as all zero (ggml's
// GROUP_MAX_EPS).
constexpr float kZeroGroup = 1e-15f;

// Rounds to the nearest integer, ties to even, the way ggml's nearest_int
// does: adding 1.5 * 2^23 leaves the rounded integer in the low mantissa
// bits. Exact for |v| < 2^22; larger values give ggml's (meaningless but
// deterministic) result too, so codes are clamped after it as in ggml.
int RoundToInt(float v) {
  const float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

void CheckFinite(std::span<const float> x, const char* type) {
  for (float v : x) CHECK(std::isfinite(v)) << type << " quantization of a non-finite value";
}

// Q6_K's sub-block fit (ggml's make_qx_quants with x² weights): codes l in
// [-nmax, nmax - 1] for a scale s, x ≈ s * l, choosing among 19 candidate
// inverse scales -(nmax + 0.1 k) / max, k in [-9, 9], the one with the
// largest weighted (sum w x l)² / (sum w l²) — that is, the smallest
// weighted error at its least-squares scale. Stores l + nmax in `codes`,
// returns s (0 for an all-zero group).
float FitSymmetricScale(const float* x, int n, int nmax, int8_t* codes) {
  float amax;
  const float max = LargestMagnitudeElement(x, n, amax);
  if (amax < kZeroGroup) {
    std::fill(codes, codes + n, 0);
    return 0.0f;
  }
  const auto code = [nmax](float inverse_scale, float v) {
    return std::clamp(RoundToInt(inverse_scale * v), -nmax, nmax - 1);
  };
  float inverse_scale = -nmax / max;
  float sum_lx = 0.0f, sum_l2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = code(inverse_scale, x[i]);
    codes[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * l;
    sum_l2 += w * l * l;
  }
  float scale = sum_l2 != 0.0f ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    inverse_scale = -(nmax + 0.1f * step) / max;
    sum_lx = sum_l2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = code(inverse_scale, x[i]);
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * l;
      sum_l2 += w * l * l;
    }
    if (sum_l2 > 0.0f && sum_lx * sum_lx > best * sum_l2) {
      for (int i = 0; i < n; ++i) codes[i] = static_cast<int8_t>(nmax + code(inverse_scale, x[i]));
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

// Q3_K's sub-block fit (ggml's make_q3_quants with rmse): codes l in [-nmax,
// nmax - 1] from the inverse scale -nmax / max, then up to 5 passes that
// move single codes to where they raise (sum w x l)² / (sum w l²), w = x².
// Stores l + nmax in `codes`, returns the least-squares scale.
float FitQ3Scale(const float* x, int n, int nmax, int8_t* codes) {
  float amax;
  const float max = LargestMagnitudeElement(x, n, amax);
  if (amax < kZeroGroup) {
    std::fill(codes, codes + n, 0);
    return 0.0f;
  }
  const float inverse_scale = -nmax / max;
  float sum_lx = 0.0f, sum_l2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(RoundToInt(inverse_scale * x[i]), -nmax, nmax - 1);
    codes[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * l;
    sum_l2 += w * l * l;
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float lx = sum_lx - w * x[i] * codes[i];
      if (lx > 0.0f) {
        float l2 = sum_l2 - w * codes[i] * codes[i];
        const int l = std::clamp(RoundToInt(x[i] * l2 / lx), -nmax, nmax - 1);
        if (l != codes[i]) {
          lx += w * x[i] * l;
          l2 += w * l * l;
          if (l2 > 0.0f && lx * lx * sum_l2 > sum_lx * sum_lx * l2) {
            codes[i] = static_cast<int8_t>(l);
            sum_lx = lx;
            sum_l2 = l2;
            ++changed;
          }
        }
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) codes[i] = static_cast<int8_t>(codes[i] + nmax);
  return sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
}

// The grid of Q2_K's, Q4_K's and Q5_K's scale-and-min fit: inverse scales
// (first + step * k + nmax) / (max - min) for k in [0, steps].
struct ScaleGrid {
  float first;
  float step;
  int steps;
  bool absolute_error;  // Q2_K weighs |error|, the others error²
};

// Q2_K's, Q4_K's and Q5_K's sub-block fit (ggml's make_qkx2_quants): codes
// l in [0, nmax] with x ≈ scale * l - min_out, min_out >= 0, choosing the
// candidate of `grid` (each with its weighted least-squares scale and
// offset) of least weighted error. Returns the scale, stores the min in
// `min_out`.
float FitScaleAndMin(const float* x, const float* weights, int n, int nmax, const ScaleGrid& grid,
                     uint8_t* codes, float& min_out) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    std::fill(codes, codes + n, 0);
    min_out = -min;
    return 0.0f;
  }
  const auto error = [&grid](float diff) { return grid.absolute_error ? std::fabs(diff) : diff * diff; };
  float inverse_scale = nmax / (max - min);
  float scale = 1 / inverse_scale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    codes[i] = static_cast<uint8_t>(std::clamp(RoundToInt(inverse_scale * (x[i] - min)), 0, nmax));
    const float diff = scale * codes[i] + min - x[i];
    best_error += weights[i] * error(diff);
  }
  uint8_t candidate[32];
  CHECK_LE(n, 32);
  for (int k = 0; k <= grid.steps; ++k) {
    inverse_scale = (grid.first + grid.step * k + nmax) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(RoundToInt(inverse_scale * (x[i] - min)), 0, nmax);
      candidate[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float determinant = sum_w * sum_l2 - sum_l * sum_l;
    if (determinant > 0.0f) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / determinant;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / determinant;
      if (this_min > 0.0f) {
        this_min = 0.0f;
        this_scale = sum_xl / sum_l2;
      }
      float this_error = 0.0f;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * candidate[i] + this_min - x[i];
        this_error += weights[i] * error(diff);
      }
      if (this_error < best_error) {
        std::copy(candidate, candidate + n, codes);
        best_error = this_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  min_out = -min;
  return scale;
}

// Packs 2-bit codes (Q2_K's, and Q3_K's low bits) as ggml lays them out:
// byte l of half h holds elements 128 h + l + 32 k in bits 2k, 2k + 1.
void PackTwoBitCodes(const uint8_t codes[kSuperBlockElements], uint8_t qs[64]) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t* c = codes + 128 * half;
    for (int l = 0; l < 32; ++l) {
      qs[32 * half + l] = static_cast<uint8_t>(c[l] | (c[l + 32] << 2) | (c[l + 64] << 4) | (c[l + 96] << 6));
    }
  }
}

// Q4_K's and Q5_K's 8 sub-block scales and mins, 6 bits each, in the 12
// bytes UnpackScaleMinK4 reads.
void PackScaleMinK4(const uint8_t scales[8], const uint8_t mins[8], uint8_t packed[kPackedScaleBytes]) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = scales[j];
    packed[j + 4] = mins[j];
  }
  for (int j = 4; j < 8; ++j) {
    packed[j + 4] = static_cast<uint8_t>((scales[j] & 0xf) | ((mins[j] & 0xf) << 4));
    packed[j - 4] |= static_cast<uint8_t>((scales[j] >> 4) << 6);
    packed[j] |= static_cast<uint8_t>((mins[j] >> 4) << 6);
  }
}

// Q4_K and Q5_K: 8 sub-blocks of 32 fitted with weights |x| + rms(x), their
// scales and mins stored in 6 bits against the largest, then every code
// recomputed from the stored scale and min (sub-blocks whose stored scale is
// 0 keep their fitted codes). Writes d, dmin, scales; returns the codes.
template <typename Block>
void QuantizeScaleMinSuperBlock(const float* x, int nmax, const ScaleGrid& grid, Block& block,
                                uint8_t codes[kSuperBlockElements]) {
  float scales[8], mins[8], weights[32];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float rms = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = rms + std::fabs(xs[l]);
    scales[j] = FitScaleAndMin(xs, weights, 32, nmax, grid, codes + 32 * j, mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inverse_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inverse_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  uint8_t stored_scales[8], stored_mins[8];
  for (int j = 0; j < 8; ++j) {
    // ggml keeps the rounded value in a uint8_t before clamping: a negative
    // scale wraps and clamps to 63.
    stored_scales[j] = std::min<uint8_t>(63, static_cast<uint8_t>(RoundToInt(inverse_scale * scales[j])));
    stored_mins[j] = std::min<uint8_t>(63, static_cast<uint8_t>(RoundToInt(inverse_min * mins[j])));
  }
  PackScaleMinK4(stored_scales, stored_mins, block.scales);
  block.d = FloatToHalf(max_scale / 63.0f);
  block.dmin = FloatToHalf(max_min / 63.0f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    UnpackScaleMinK4(block.scales, j, sc, m);
    const float d = HalfToFloat(block.d) * sc;
    if (d == 0.0f) continue;
    const float dm = HalfToFloat(block.dmin) * m;
    for (int i = 0; i < 32; ++i) {
      codes[32 * j + i] = static_cast<uint8_t>(std::clamp(RoundToInt((x[32 * j + i] + dm) / d), 0, nmax));
    }
  }
}

void QuantizeQ2_K(const float* x, BlockQ2_K& block) {
  constexpr float kLevels = 15.0f;  // 4-bit sub-block scales and mins
  constexpr ScaleGrid kGrid{-0.5f, 0.1f, 15, true};
  uint8_t codes[kSuperBlockElements];
  float scales[16], mins[16], weights[16];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 16; ++j) {
    for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = FitScaleAndMin(x + 16 * j, weights, 16, 3, kGrid, codes + 16 * j, mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  if (max_scale > 0.0f) {
    const float inverse = kLevels / max_scale;
    for (int j = 0; j < 16; ++j) block.scales[j] = static_cast<uint8_t>(RoundToInt(inverse * scales[j]));
    block.d = FloatToHalf(max_scale / kLevels);
  } else {
    std::fill(block.scales, block.scales + 16, 0);
    block.d = FloatToHalf(0.0f);
  }
  if (max_min > 0.0f) {
    const float inverse = kLevels / max_min;
    for (int j = 0; j < 16; ++j) block.scales[j] |= static_cast<uint8_t>(RoundToInt(inverse * mins[j]) << 4);
    block.dmin = FloatToHalf(max_min / kLevels);
  } else {
    block.dmin = FloatToHalf(0.0f);
  }
  for (int j = 0; j < 16; ++j) {
    const float d = HalfToFloat(block.d) * (block.scales[j] & 0xf);
    if (d == 0.0f) continue;
    const float dm = HalfToFloat(block.dmin) * (block.scales[j] >> 4);
    for (int i = 0; i < 16; ++i) {
      codes[16 * j + i] = static_cast<uint8_t>(std::clamp(RoundToInt((x[16 * j + i] + dm) / d), 0, 3));
    }
  }
  PackTwoBitCodes(codes, block.qs);
}

void QuantizeQ3_K(const float* x, BlockQ3_K& block) {
  int8_t codes[kSuperBlockElements];
  float scales[16];
  float max_scale = 0.0f, amax = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scales[j] = FitQ3Scale(x + 16 * j, 16, 4, codes + 16 * j);
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  // Scale j (6 bits, offset 32): its low nibble in byte j % 8 (low nibble
  // for j < 8, high for j >= 8), its high 2 bits in byte 8 + j % 4 at bit
  // 2 (j / 4) — the layout UnpackQ3KScales reads.
  std::fill(block.scales, block.scales + kPackedScaleBytes, 0);
  if (max_scale != 0.0f) {
    const float inverse = -32.0f / max_scale;
    for (int j = 0; j < 16; ++j) {
      // ggml narrows the rounded value to int8_t before clamping.
      const int8_t rounded = static_cast<int8_t>(RoundToInt(inverse * scales[j]));
      const int l = std::clamp<int>(rounded, -32, 31) + 32;
      block.scales[j % 8] |= static_cast<uint8_t>(j < 8 ? l & 0xf : (l & 0xf) << 4);
      block.scales[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
    }
    block.d = FloatToHalf(1 / inverse);
  } else {
    block.d = FloatToHalf(0.0f);
  }
  int8_t stored[16];
  UnpackQ3KScales(block.scales, stored);
  for (int j = 0; j < 16; ++j) {
    const float d = HalfToFloat(block.d) * stored[j];
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; ++i) {
      codes[16 * j + i] = static_cast<int8_t>(std::clamp(RoundToInt(x[16 * j + i] / d), -4, 3) + 4);
    }
  }
  // Codes in [0, 7]: bit 2 goes to hmask (bit i / 32 of byte i % 32), the
  // low 2 bits to qs.
  std::fill(block.hmask, block.hmask + 32, 0);
  uint8_t low[kSuperBlockElements];
  for (int i = 0; i < kSuperBlockElements; ++i) {
    if (codes[i] > 3) block.hmask[i % 32] |= static_cast<uint8_t>(1 << (i / 32));
    low[i] = static_cast<uint8_t>(codes[i] & 3);
  }
  PackTwoBitCodes(low, block.qs);
}

void QuantizeQ4_K(const float* x, BlockQ4_K& block) {
  uint8_t codes[kSuperBlockElements];
  QuantizeScaleMinSuperBlock(x, 15, ScaleGrid{-1.0f, 0.1f, 20, false}, block, codes);
  for (int group = 0; group < 4; ++group) {
    for (int l = 0; l < 32; ++l) {
      block.qs[32 * group + l] =
          static_cast<uint8_t>(codes[64 * group + l] | (codes[64 * group + 32 + l] << 4));
    }
  }
}

void QuantizeQ5_K(const float* x, BlockQ5_K& block) {
  uint8_t codes[kSuperBlockElements];
  QuantizeScaleMinSuperBlock(x, 31, ScaleGrid{-0.5f, 0.1f, 15, false}, block, codes);
  // Low nibbles as Q4_K's; the fifth bit of element i in bit i / 32 of
  // qh[i % 32].
  std::fill(block.qh, block.qh + 32, 0);
  for (int i = 0; i < kSuperBlockElements; ++i) {
    if (codes[i] > 15) block.qh[i % 32] |= static_cast<uint8_t>(1 << (i / 32));
  }
  for (int group = 0; group < 4; ++group) {
    for (int l = 0; l < 32; ++l) {
      block.qs[32 * group + l] =
          static_cast<uint8_t>((codes[64 * group + l] & 0xf) | ((codes[64 * group + 32 + l] & 0xf) << 4));
    }
  }
}

void QuantizeQ6_K(const float* x, BlockQ6_K& block) {
  int8_t codes[kSuperBlockElements];
  float scales[16];
  float max_scale = 0.0f, max_abs_scale = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scales[j] = FitSymmetricScale(x + 16 * j, 16, 32, codes + 16 * j);
    if (std::fabs(scales[j]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < kZeroGroup) {
    std::memset(&block, 0, sizeof block);
    return;
  }
  const float inverse = -128.0f / max_scale;
  block.d = FloatToHalf(1 / inverse);
  for (int j = 0; j < 16; ++j)
    block.scales[j] = static_cast<int8_t>(std::min(127, RoundToInt(inverse * scales[j])));
  for (int j = 0; j < 16; ++j) {
    const float d = HalfToFloat(block.d) * block.scales[j];
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; ++i) {
      codes[16 * j + i] = static_cast<int8_t>(std::clamp(RoundToInt(x[16 * j + i] / d), -32, 31) + 32);
    }
  }
  // Code of element 128 n + 32 k + l (n half, k quarter): low nibble in
  // ql[64 n + 32 (k % 2) + l] (low half of the byte for k < 2), high 2 bits
  // in qh[32 n + l] at bit 2k — the layout Q6KCode reads.
  for (int half = 0; half < 2; ++half) {
    const int8_t* c = codes + 128 * half;
    for (int l = 0; l < 32; ++l) {
      block.ql[64 * half + l] = static_cast<uint8_t>((c[l] & 0xf) | ((c[l + 64] & 0xf) << 4));
      block.ql[64 * half + 32 + l] = static_cast<uint8_t>((c[l + 32] & 0xf) | ((c[l + 96] & 0xf) << 4));
      block.qh[32 * half + l] = static_cast<uint8_t>((c[l] >> 4) | ((c[l + 32] >> 4) << 2) |
                                                     ((c[l + 64] >> 4) << 4) | ((c[l + 96] >> 4) << 6));
    }
  }
}

// The index of the kIq4NlValues entry nearest `v` (the lower on ties), by
// ggml's bisection (best_index_int8).
int NearestIq4Index(float v) {
  if (v <= kIq4NlValues[0]) return 0;
  if (v >= kIq4NlValues[15]) return 15;
  int low = 0, high = 15;
  while (high - low > 1) {
    const int middle = (low + high) / 2;
    if (v < kIq4NlValues[middle]) {
      high = middle;
    } else {
      low = middle;
    }
  }
  return v - kIq4NlValues[high - 1] < kIq4NlValues[high] - v ? high - 1 : high;
}

// The scale of one block of 32 on the IQ4 grid (ggml's
// quantize_row_iq4_nl_impl without weights, 7 tries each side): the
// least-squares scale for the codes of inverse scale -127 / max, then for
// each of (k - 127) / max, k in [-7, 7], keeping the one with the largest
// (sum w q x)² / (sum w q²), w = x². Stores the codes of the first
// candidate in `codes` (callers recompute them from the stored scale);
// returns 0 for an all-zero block.
float FitIq4Scale(const float* x, uint8_t codes[32]) {
  constexpr int kTries = 7;
  float amax;
  const float max = LargestMagnitudeElement(x, 32, amax);
  if (amax < kZeroGroup) return 0.0f;
  float d = -max / kIq4NlValues[0];
  float inverse = 1 / d;
  float sum_qx = 0.0f, sum_q2 = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const int l = NearestIq4Index(inverse * x[j]);
    codes[j] = static_cast<uint8_t>(l);
    const float q = kIq4NlValues[l];
    const float w = x[j] * x[j];
    sum_qx += w * q * x[j];
    sum_q2 += w * q * q;
  }
  d = sum_q2 > 0.0f ? sum_qx / sum_q2 : 0.0f;
  float best = d * sum_qx;
  for (int k = -kTries; k <= kTries; ++k) {
    inverse = (k + kIq4NlValues[0]) / max;
    sum_qx = sum_q2 = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float q = kIq4NlValues[NearestIq4Index(inverse * x[j])];
      const float w = x[j] * x[j];
      sum_qx += w * q * x[j];
      sum_q2 += w * q * q;
    }
    if (sum_q2 > 0.0f && sum_qx * sum_qx > best * sum_q2) {
      d = sum_qx / sum_q2;
      best = d * sum_qx;
    }
  }
  return d;
}

// Packs 32 4-bit IQ4 indices: byte j holds element j low, j + 16 high.
void PackIq4Codes(const uint8_t codes[32], uint8_t qs[16]) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(codes[j] | (codes[16 + j] << 4));
}

void QuantizeIQ4_NL(const float* x, BlockIQ4_NL& block) {
  uint8_t codes[32];
  const float d = FitIq4Scale(x, codes);
  block.d = FloatToHalf(d);
  // The f32 scale, not its f16 rounding, picks the codes (as in ggml).
  const float inverse = d != 0.0f ? 1 / d : 0.0f;
  for (int j = 0; j < 32; ++j) codes[j] = static_cast<uint8_t>(NearestIq4Index(inverse * x[j]));
  PackIq4Codes(codes, block.qs);
}

void QuantizeIQ4_XS(const float* x, BlockIQ4_XS& block) {
  uint8_t codes[32];
  float scales[8];
  float max_scale = 0.0f, amax_scale = 0.0f;
  for (int j = 0; j < 8; ++j) {
    scales[j] = FitIq4Scale(x + 32 * j, codes);
    if (std::fabs(scales[j]) > amax_scale) {
      amax_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  // Sub-block scales in 6 bits (offset 32) against d = -max / 32; codes
  // recomputed from the f32 d times the stored scale.
  const float d = -max_scale / 32;
  block.d = FloatToHalf(d);
  const float inverse = d != 0.0f ? 1 / d : 0.0f;
  block.scales_h = 0;
  std::fill(block.scales_l, block.scales_l + 4, 0);
  for (int j = 0; j < 8; ++j) {
    const int l = std::clamp(RoundToInt(inverse * scales[j]), -32, 31);
    const float dl = d * l;
    const float inverse_dl = dl != 0.0f ? 1 / dl : 0.0f;
    for (int i = 0; i < 32; ++i) codes[i] = static_cast<uint8_t>(NearestIq4Index(inverse_dl * x[32 * j + i]));
    PackIq4Codes(codes, block.qs + 16 * j);
    const int stored = l + 32;
    block.scales_l[j / 2] |= static_cast<uint8_t>((stored & 0xf) << (4 * (j % 2)));
    block.scales_h |= static_cast<uint16_t>((stored >> 4) << (2 * j));
  }
}

template <typename Block, int kElements, void (*Quantize)(const float*, Block&)>
void QuantizeRow(std::span<const float> x, std::span<Block> out, const char* type) {
  CHECK_EQ(x.size(), out.size() * kElements);
  CheckFinite(x, type);
  for (size_t b = 0; b < out.size(); ++b) Quantize(x.data() + b * kElements, out[b]);
}

}  // namespace

void QuantizeRowQ2_K(std::span<const float> x, std::span<BlockQ2_K> out) {
  QuantizeRow<BlockQ2_K, kSuperBlockElements, QuantizeQ2_K>(x, out, "Q2_K");
}
void QuantizeRowQ3_K(std::span<const float> x, std::span<BlockQ3_K> out) {
  QuantizeRow<BlockQ3_K, kSuperBlockElements, QuantizeQ3_K>(x, out, "Q3_K");
}
void QuantizeRowQ4_K(std::span<const float> x, std::span<BlockQ4_K> out) {
  QuantizeRow<BlockQ4_K, kSuperBlockElements, QuantizeQ4_K>(x, out, "Q4_K");
}
void QuantizeRowQ5_K(std::span<const float> x, std::span<BlockQ5_K> out) {
  QuantizeRow<BlockQ5_K, kSuperBlockElements, QuantizeQ5_K>(x, out, "Q5_K");
}
void QuantizeRowQ6_K(std::span<const float> x, std::span<BlockQ6_K> out) {
  QuantizeRow<BlockQ6_K, kSuperBlockElements, QuantizeQ6_K>(x, out, "Q6_K");
}
void QuantizeRowIQ4_XS(std::span<const float> x, std::span<BlockIQ4_XS> out) {
  QuantizeRow<BlockIQ4_XS, kSuperBlockElements, QuantizeIQ4_XS>(x, out, "IQ4_XS");
}
void QuantizeRowIQ4_NL(std::span<const float> x, std::span<BlockIQ4_NL> out) {
  QuantizeRow<BlockIQ4_NL, kQuantBlockElements, QuantizeIQ4_NL>(x, out, "IQ4_NL");
}

}  // namespace inferno
