// Internal to //kernels:kernels: the kernels on activation vectors (softmax,
// one head of attention, ...) as compiled for one instruction set from
// vector_kernels.inc (one part of each IsaKernels table, isa_kernels.h).
// The contracts are those of the functions of the same names in kernels.h,
// on pointers and lengths.
//
// Results depend only on the instruction set chosen.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace inferno::vector_internal {

struct VectorKernels {
  // In place: x[0, n) = exp(x - max(x)) / sum.
  void (*softmax)(float* x, int64_t n);
  // out (head_dim) = softmax(scores) · values, scores (positions) = q ·
  // keysᵀ / score_divisor (each by matmul's dot): the key and the value of
  // the s-th position are the head_dim floats at keys + r * stride and
  // values + r * stride, r = (first_row + s) mod capacity (first_row <
  // capacity, positions <= capacity); scores: scratch of `positions` floats.
  void (*attend_one_head)(float* out, const float* q, const float* keys, const float* values,
                          int64_t first_row, int64_t positions, int64_t capacity, int64_t stride,
                          int64_t head_dim, float score_divisor, float* scores);
};

}  // namespace inferno::vector_internal
