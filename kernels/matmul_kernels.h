// Internal to //kernels:kernels: the row loops of MatMul and the vector dot
// product as compiled for one instruction set from matmul_kernels.inc (one
// part of each IsaKernels table, isa_kernels.h).
//
// A row's result depends only on the instruction set chosen, never on the
// thread count, the row split or the batch: every row goes through the same
// operations whichever rows it is grouped with.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace inferno::matmul_internal {

// The rows of x (n, cols) in the forms the row loops read: f32 values; when
// a matrix of a block type of 32 is in the product, x quantized to 8-bit
// blocks of 32: per row cols / 32 f32 scales, cols int8 codes in
// [-127, 127], cols / 32 sums of each block's codes and cols / 16 sums of
// each 16 codes (quantize_input); and when a super-block (K) type is in it,
// x quantized to blocks of 256 the same way: cols / 256 scales, cols codes,
// cols / 16 sums of 16 (quantize_super_input).
struct InputRows {
  const float* values = nullptr;
  const float* scales = nullptr;
  const int8_t* codes = nullptr;
  const int32_t* sums = nullptr;
  const int16_t* half_sums = nullptr;
  const float* super_scales = nullptr;
  const int8_t* super_codes = nullptr;
  const int16_t* super_half_sums = nullptr;
};

// out (n, rows): columns [row_begin, row_end) of every row t of out get
// dot(x row t, w row r), w pointing at row row_begin of a matrix of
// `row_bytes`-byte rows of `cols` elements in one stored type.
using RowsFunction = void (*)(float* out, const InputRows& x, const std::byte* w, int64_t row_bytes,
                              int64_t n, int64_t rows, int64_t cols, int64_t row_begin, int64_t row_end);

struct MatMulKernels {
  RowsFunction f32, bf16, f16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs;
  // Dot product of a[0, n) and b[0, n) in f32, as the f32 row loop computes
  // one element.
  float (*dot)(const float* a, const float* b, int64_t n);
  // Quantizes `count` (a multiple of `block`, 32 or 256) values of x into
  // count / block scales (max |x| / 127 of each block), `count` codes
  // (round(x / scale)), count / 32 sums of each 32 codes (`sums`, may be
  // null) and count / 16 sums of each 16 codes. A block holding a NaN or an
  // infinity gets a NaN scale, so the products it enters are NaN, as in f32.
  void (*quantize_input)(const float* x, int64_t count, int64_t block, float* scales, int8_t* codes,
                         int32_t* sums, int16_t* half_sums);
};

}  // namespace inferno::matmul_internal
