// Scalar conversions between f32 and the two 16-bit float formats checkpoints
// store: IEEE 754 binary16 (F16) and bfloat16 (BF16, the high half of an f32).
//
// Thread-safety: pure functions.
#pragma once

#include <bit>
#include <cstdint>

namespace inferno {

// binary16 -> binary32, exact for every input (subnormals, infinities, NaN).
float HalfToFloat(uint16_t h);

// binary32 -> binary16, rounded to nearest, ties to even (as F16C's
// vcvtps2ph with rounding mode 0 and ggml's GGML_FP32_TO_FP16 do): values
// beyond the largest finite half become infinities, tiny ones subnormals or
// zero, NaN stays NaN.
uint16_t FloatToHalf(float f);

// bfloat16 -> f32: exact (the bf16 bits are the f32's high half).
inline float BFloat16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// f32 -> bfloat16, rounded to nearest, ties to even; NaN stays NaN.
uint16_t FloatToBFloat16(float f);

}  // namespace inferno
