// Kernels: the numerical building blocks of a Llama forward pass — matrix
// products (f32 activations against weights of any stored type), RMSNorm, softmax, RoPE, SwiGLU and causal
// attention over a KV cache.
//
// Instruction sets: MatMul, Dot, Softmax and AttendOneHead run code chosen
// once per process by what the CPU supports (AVX-512 VNNI, AVX2, or the
// build target), whatever the build's -march; the environment variable
// INFERNO_KERNEL_ISA=avx2|baseline asks for less, to compare them, and
// KernelInstructionSet() names the choice.
//
// Determinism: each output element is computed by the same sequence of
// floating-point operations whatever the thread count, the row split or the
// batch size (a matrix-matrix product computes every element exactly as the
// matrix-vector product would): a result depends only on the instruction set
// chosen. Threads only split output rows (or heads), and the rows of x that
// MatMul quantizes. No kernel allocates.
//
// Thread-safety: the functions are reentrant; a ThreadPool argument must not
// be used by another thread during the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "tensor/dtype.h"

namespace inferno {

// Dot product of a[0, n) and b[0, n), summed in 32 independent lanes (explicit
// 8-float vectors, so no -ffast-math is needed) reduced in a fixed order.
float Dot(const float* a, const float* b, int64_t n);

// A (rows, cols) weight matrix in its stored type, row-major: row r is the
// DTypeBytes(dtype, cols) bytes at data + r * DTypeBytes(dtype, cols) (no
// alignment required). For Q8_0 and Q4_0, cols is a multiple of 32.
struct WeightMatrix {
  DType dtype = DType::kF32;
  const std::byte* data = nullptr;
  int64_t rows = 0;
};

// out (n, rows) = x (n, cols) · w (rows, cols)ᵀ, where the rows of w lie in
// several matrices (w[0] the first rows, w[1] the next, ...; together at
// least `rows` rows, possibly of different types) — projections that read
// one input, such as q, k and v, in one product without copying them into
// one matrix. Rows are split among the pool's threads and processed in
// blocks that stay in cache while every row of x passes over them (batched
// prefill reads the weights once), in tiles of a few rows of x by a few rows
// of w, so each weight vector loaded (and widened or unpacked) serves
// several positions.
//   F32, BF16, F16: weights widened to f32 (a BF16 or F16 row gives exactly
//     the f32 result on its widened values).
//   Q8_0, Q4_0: x is quantized to 8-bit blocks of 32 (f32 scale per block,
//     once per call and row of x, the same way whatever the batch), and each
//     block's product is an integer dot product scaled by both scales.
// Precondition: the spans hold at least the sizes given; `out` does not alias
// `x` or the weights.
void MatMul(std::span<float> out, std::span<const float> x, std::span<const WeightMatrix> w, int64_t n,
            int64_t rows, int64_t cols, ThreadPool& pool);
// The same product with one f32 matrix w (rows, cols).
void MatMul(std::span<float> out, std::span<const float> x, std::span<const float> w, int64_t n, int64_t rows,
            int64_t cols, ThreadPool& pool);

// "avx512vnni", "avx2" or "baseline": the kernels this process runs.
const char* KernelInstructionSet();

// out (dim) = (weight_offset + weight (dim)) * x (dim) / sqrt(mean(x²) + eps)
// (weight_offset 1: Gemma's norms). `out` may alias `x`.
void RmsNorm(std::span<float> out, std::span<const float> x, std::span<const float> weight, float eps,
             float weight_offset = 0.0f);

// In place: x = exp(x - max(x)) / sum, each exponential within 2 ulp of
// std::exp; the same bits under every instruction set. A NaN makes every
// element NaN.
void Softmax(std::span<float> x);

// RoPE tables for positions [0, seq_len): cos and sin, each (seq_len,
// head_dim / 2) with head_dim / 2 = inverse_frequencies.size(); pair i of
// position p turns by p * inverse_frequencies[i] (see engine/rope.h).
void FillRopeTables(std::span<float> cos_table, std::span<float> sin_table, int64_t seq_len,
                    std::span<const float> inverse_frequencies);

// In place: rotates pairs (i, i + head_dim / 2) of every head of `x` (n_heads
// * head_dim) — Hugging Face's order, in which checkpoints store q and k rows
// — by the angles of one position, `cos`/`sin` being that position's row of
// the tables (head_dim / 2 each).
void ApplyRope(std::span<float> x, int64_t head_dim, std::span<const float> cos, std::span<const float> sin);

// out (hidden) = silu(gate) * up, where gate_up (2 * hidden) holds gate then up.
void SwiGlu(std::span<float> out, std::span<const float> gate_up);
// out (hidden) = gelu(gate) * up, GELU by its tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))) (PyTorch's "tanh" GELU).
void GeGlu(std::span<float> out, std::span<const float> gate_up);

// The cached positions one query attends to: positions [first, last] of its
// sequence (causal attention: first = 0; a sliding window of w positions:
// first = max(0, last - w + 1)), position p in row p % capacity of the layer's
// cache. Precondition: 0 <= first <= last, last - first < capacity.
struct AttentionSpan {
  int64_t first = 0;
  int64_t last = 0;
  int64_t capacity = 0;
};

// Grouped-query attention of one query position for one head:
// out = softmax(q · keysᵀ / score_divisor) · values over the positions of
// `span`, the scores as Dot computes them and the softmax as Softmax
// (score_divisor: sqrt(head_dim), or Gemma's sqrt(query_pre_attn_scalar)).
// q: (head_dim) the head's query; keys, values: the KV cache of one layer,
// (span.capacity, kv_dim), read at column offset kv_head * head_dim;
// scores: scratch of at least span.last - span.first + 1 floats;
// out: (head_dim), not aliasing the others.
void AttendOneHead(std::span<float> out, std::span<const float> q, const float* keys, const float* values,
                   AttentionSpan span, int64_t kv_dim, int64_t kv_head, int64_t head_dim, float score_divisor,
                   std::span<float> scores);

}  // namespace inferno
