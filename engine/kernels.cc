#include "engine/kernels.h"

#include <algorithm>
#include <cmath>

#include <glog/logging.h>

namespace inferno {
namespace {

// Weight floats a block of rows may take so that it stays in L2 while every
// row of x passes over it.
constexpr int64_t kBlockFloats = 32 * 1024;

// Loops over the accumulators unrolled whatever the optimization level: at
// -O2 (plain -c opt) GCC keeps them in memory otherwise, which made decode
// twice as slow as -O3.
#if defined(__clang__)
#define INFERNO_UNROLL _Pragma("unroll")
#else
#define INFERNO_UNROLL _Pragma("GCC unroll 16")
#endif

// 8 floats; GCC and clang lower the arithmetic to AVX (or pairs of SSE) ops.
typedef float Vec8 __attribute__((vector_size(32)));
constexpr int64_t kVecLanes = 8;
constexpr int kChains = 4;  // independent accumulators per row
constexpr int64_t kStep = kVecLanes * kChains;

// Vectors travel through out-parameters: returning them by value would
// depend on the vector ABI of the target (-Wpsabi without AVX).
inline void Load(Vec8& v, const float* p) { __builtin_memcpy(&v, p, sizeof v); }

// Up to 7 floats, zero-padded.
inline void LoadPartial(Vec8& v, const float* p, int64_t count) {
  v = Vec8{};
  __builtin_memcpy(&v, p, count * sizeof(float));
}

// out[r] = dot(w + r * cols, x) for r < kRows. Every row goes through the
// same operations whatever kRows is (x is only loaded once for all rows), so
// a row's result does not depend on how rows are grouped.
template <int kRows>
[[gnu::always_inline]] inline void DotRows(const float* w, int64_t cols, const float* x, float* out) {
  Vec8 acc[kRows][kChains] = {};
  int64_t i = 0;
  for (; i + kStep <= cols; i += kStep) {
    Vec8 xv[kChains];
    Vec8 wv;
    INFERNO_UNROLL
    for (int c = 0; c < kChains; ++c) Load(xv[c], x + i + c * kVecLanes);
    INFERNO_UNROLL
    for (int r = 0; r < kRows; ++r) {
      INFERNO_UNROLL
      for (int c = 0; c < kChains; ++c) {
        Load(wv, w + r * cols + i + c * kVecLanes);
        acc[r][c] += wv * xv[c];
      }
    }
  }
  for (; i + kVecLanes <= cols; i += kVecLanes) {
    Vec8 xv, wv;
    Load(xv, x + i);
    INFERNO_UNROLL
    for (int r = 0; r < kRows; ++r) {
      Load(wv, w + r * cols + i);
      acc[r][0] += wv * xv;
    }
  }
  if (i < cols) {
    Vec8 xv, wv;
    LoadPartial(xv, x + i, cols - i);
    for (int r = 0; r < kRows; ++r) {
      LoadPartial(wv, w + r * cols + i, cols - i);
      acc[r][0] += wv * xv;
    }
  }
  for (int r = 0; r < kRows; ++r) {
    const Vec8 sum = (acc[r][0] + acc[r][1]) + (acc[r][2] + acc[r][3]);
    out[r] = ((sum[0] + sum[4]) + (sum[2] + sum[6])) + ((sum[1] + sum[5]) + (sum[3] + sum[7]));
  }
}

// Rows [row_begin, row_end) of MatMul, in blocks of rows that stay in cache
// while every row of x passes over them; `w` points at row row_begin.
// Inlined into one function per instruction set below.
[[gnu::always_inline]] inline void MatMulRows(float* out, const float* x, const float* w, int64_t n,
                                              int64_t rows, int64_t cols, int64_t row_begin,
                                              int64_t row_end) {
  constexpr int kRowGroup = 4;
  const int64_t block_rows = std::max<int64_t>(kRowGroup, kBlockFloats / cols / kRowGroup * kRowGroup);
  for (int64_t block = row_begin; block < row_end; block += block_rows) {
    const int64_t block_end = std::min(row_end, block + block_rows);
    for (int64_t t = 0; t < n; ++t) {
      const float* x_row = x + t * cols;
      float* out_row = out + t * rows;
      int64_t r = block;
      for (; r + kRowGroup <= block_end; r += kRowGroup)
        DotRows<kRowGroup>(w + (r - row_begin) * cols, cols, x_row, out_row + r);
      for (; r < block_end; ++r) DotRows<1>(w + (r - row_begin) * cols, cols, x_row, out_row + r);
    }
  }
}

using MatMulRowsFunction = void (*)(float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t,
                                    int64_t);

// The instruction set the build targets (baseline x86-64 unless -march says
// more).
void MatMulRowsForBuildTarget(float* out, const float* x, const float* w, int64_t n, int64_t rows,
                              int64_t cols, int64_t row_begin, int64_t row_end) {
  MatMulRows(out, x, w, n, rows, cols, row_begin, row_end);
}

#if defined(__x86_64__)
// AVX2: 8-float vectors in one register instead of two SSE halves. FMA is
// left out on purpose: the build target's version may not contract a * b + c
// into one rounding, and a row's result must not depend on which version ran.
[[gnu::target("avx2")]] void MatMulRowsAvx2(float* out, const float* x, const float* w, int64_t n,
                                            int64_t rows, int64_t cols, int64_t row_begin, int64_t row_end) {
  MatMulRows(out, x, w, n, rows, cols, row_begin, row_end);
}
#endif

// Chosen once, by what the CPU supports: every build mode runs AVX2 code
// on an AVX2 machine (-c opt without -march=native was 3x slower).
MatMulRowsFunction SelectMatMulRows() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) return MatMulRowsAvx2;
#endif
  return MatMulRowsForBuildTarget;
}

}  // namespace

float Dot(const float* a, const float* b, int64_t n) {
  float out;
  DotRows<1>(a, n, b, &out);
  return out;
}

void MatMul(std::span<float> out, std::span<const float> x, std::span<const float> w, int64_t n, int64_t rows,
            int64_t cols, ThreadPool& pool) {
  const std::span<const float> blocks[] = {w};
  MatMul(out, x, blocks, n, rows, cols, pool);
}

void MatMul(std::span<float> out, std::span<const float> x, std::span<const std::span<const float>> w,
            int64_t n, int64_t rows, int64_t cols, ThreadPool& pool) {
  DCHECK_GE(static_cast<int64_t>(out.size()), n * rows);
  DCHECK_GE(static_cast<int64_t>(x.size()), n * cols);
  int64_t stacked_rows = 0;
  for (const std::span<const float> block : w) {
    DCHECK_EQ(static_cast<int64_t>(block.size()) % cols, 0);
    stacked_rows += static_cast<int64_t>(block.size()) / cols;
  }
  DCHECK_GE(stacked_rows, rows);
  static const MatMulRowsFunction kRows = SelectMatMulRows();
  float* out_data = out.data();
  const float* x_data = x.data();
  pool.ParallelFor(rows, [&](int64_t row_begin, int64_t row_end, int) {
    int64_t block_first_row = 0;
    for (const std::span<const float> block : w) {
      const int64_t block_end_row = block_first_row + static_cast<int64_t>(block.size()) / cols;
      const int64_t begin = std::max(row_begin, block_first_row);
      const int64_t end = std::min(row_end, block_end_row);
      if (begin < end) {
        kRows(out_data, x_data, block.data() + (begin - block_first_row) * cols, n, rows, cols, begin, end);
      }
      block_first_row = block_end_row;
    }
  });
}

void RmsNorm(std::span<float> out, std::span<const float> x, std::span<const float> weight, float eps) {
  const int64_t dim = static_cast<int64_t>(x.size());
  DCHECK_EQ(out.size(), x.size());
  DCHECK_EQ(weight.size(), x.size());
  float mean_square = Dot(x.data(), x.data(), dim) / static_cast<float>(dim);
  const float scale = 1.0f / std::sqrt(mean_square + eps);
  for (int64_t i = 0; i < dim; ++i) out[i] = weight[i] * (scale * x[i]);
}

void Softmax(std::span<float> x) {
  if (x.empty()) return;
  const float max_value = *std::max_element(x.begin(), x.end());
  float sum = 0.0f;
  for (float& v : x) {
    v = std::exp(v - max_value);
    sum += v;
  }
  for (float& v : x) v /= sum;
}

void FillRopeTables(std::span<float> cos_table, std::span<float> sin_table, int64_t seq_len,
                    std::span<const float> inverse_frequencies) {
  const int64_t half = static_cast<int64_t>(inverse_frequencies.size());
  CHECK_GE(static_cast<int64_t>(cos_table.size()), seq_len * half);
  CHECK_GE(static_cast<int64_t>(sin_table.size()), seq_len * half);
  for (int64_t pos = 0; pos < seq_len; ++pos) {
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(pos) * inverse_frequencies[i];
      cos_table[pos * half + i] = std::cos(angle);
      sin_table[pos * half + i] = std::sin(angle);
    }
  }
}

void ApplyRope(std::span<float> x, int64_t head_dim, std::span<const float> cos, std::span<const float> sin) {
  const int64_t half = head_dim / 2;
  const int64_t size = static_cast<int64_t>(x.size());
  for (int64_t head = 0; head < size; head += head_dim) {
    float* v = x.data() + head;
    for (int64_t i = 0; i < half; ++i) {
      const float v0 = v[i];
      const float v1 = v[i + half];
      v[i] = v0 * cos[i] - v1 * sin[i];
      v[i + half] = v0 * sin[i] + v1 * cos[i];
    }
  }
}

void SwiGlu(std::span<float> out, std::span<const float> gate_up) {
  const size_t hidden = out.size();
  DCHECK_EQ(gate_up.size(), 2 * hidden);
  const float* gate = gate_up.data();
  const float* up = gate_up.data() + hidden;
  for (size_t i = 0; i < hidden; ++i) {
    float value = gate[i];
    value *= 1.0f / (1.0f + std::exp(-value));
    out[i] = value * up[i];
  }
}

void AttendOneHead(std::span<float> out, std::span<const float> q, const float* keys, const float* values,
                   int64_t pos, int64_t kv_dim, int64_t kv_head, int64_t head_dim, std::span<float> scores) {
  DCHECK_GE(static_cast<int64_t>(scores.size()), pos + 1);
  const float sqrt_head_dim = std::sqrt(static_cast<float>(head_dim));
  const int64_t offset = kv_head * head_dim;
  for (int64_t s = 0; s <= pos; ++s)
    scores[s] = Dot(q.data(), keys + s * kv_dim + offset, head_dim) / sqrt_head_dim;
  Softmax(scores.first(pos + 1));
  std::fill(out.begin(), out.begin() + head_dim, 0.0f);
  for (int64_t s = 0; s <= pos; ++s) {
    const float weight = scores[s];
    const float* v = values + s * kv_dim + offset;
    for (int64_t i = 0; i < head_dim; ++i) out[i] += weight * v[i];
  }
}

}  // namespace inferno
