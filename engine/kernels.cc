#include "engine/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <glog/logging.h>

#include "engine/matmul_kernels.h"
#include "loader/quant_blocks.h"

namespace inferno {
namespace {

using matmul_internal::InputRows;
using matmul_internal::IsaKernels;
using matmul_internal::RowsFunction;

// Chosen once, by what the CPU supports: every build mode runs the AVX2 or
// AVX-512 code on a CPU that has it (-c opt without -march=native was 3x
// slower with build-target kernels).
#if defined(__x86_64__)
// CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports has no "f16c").
bool HasF16c() {
  unsigned int eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}
#endif

// INFERNO_KERNEL_ISA=baseline|avx2 picks a lesser set, for tests and
// benchmarks that compare them; a set the CPU lacks is not honoured.
const IsaKernels& Kernels() {
  static const IsaKernels kernels = [] {
    const char* forced = std::getenv("INFERNO_KERNEL_ISA");
    const std::string wanted = forced != nullptr ? forced : "";
    if (wanted == "baseline") return matmul_internal::BaselineKernels();
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (wanted != "avx2" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
        __builtin_cpu_supports("fma") && HasF16c()) {
      return matmul_internal::Avx512VnniKernels();
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c()) {
      return matmul_internal::Avx2Kernels();
    }
#endif
    return matmul_internal::BaselineKernels();
  }();
  return kernels;
}

RowsFunction RowsFor(const IsaKernels& kernels, DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return kernels.f32;
    case DType::kBF16:
      return kernels.bf16;
    case DType::kF16:
      return kernels.f16;
    case DType::kQ8_0:
      return kernels.q8_0;
    case DType::kQ4_0:
      return kernels.q4_0;
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

// Scratch for x quantized to 8-bit blocks, per calling thread: grows to the
// largest x seen, then is reused (no allocation per token).
struct QuantizedInput {
  std::vector<float> scales;
  std::vector<int8_t> codes;
  std::vector<int32_t> sums;
};

}  // namespace

float Dot(const float* a, const float* b, int64_t n) { return Kernels().dot(a, b, n); }

const char* KernelInstructionSet() { return Kernels().name; }

void MatMul(std::span<float> out, std::span<const float> x, std::span<const float> w, int64_t n, int64_t rows,
            int64_t cols, ThreadPool& pool) {
  const WeightMatrix matrix[] = {
      {DType::kF32, reinterpret_cast<const std::byte*>(w.data()), static_cast<int64_t>(w.size()) / cols}};
  MatMul(out, x, matrix, n, rows, cols, pool);
}

void MatMul(std::span<float> out, std::span<const float> x, std::span<const WeightMatrix> w, int64_t n,
            int64_t rows, int64_t cols, ThreadPool& pool) {
  DCHECK_GE(static_cast<int64_t>(out.size()), n * rows);
  DCHECK_GE(static_cast<int64_t>(x.size()), n * cols);
  const IsaKernels& kernels = Kernels();
  int64_t stacked_rows = 0;
  bool blocks = false;
  for (const WeightMatrix& matrix : w) {
    stacked_rows += matrix.rows;
    blocks = blocks || DTypeBlockElements(matrix.dtype) > 1;
  }
  DCHECK_GE(stacked_rows, rows);
  InputRows input{.values = x.data()};
  if (blocks) {
    CHECK_EQ(cols % kQuantBlockElements, 0) << "a block-typed matrix of " << cols << " columns";
    thread_local QuantizedInput quantized;
    if (static_cast<int64_t>(quantized.codes.size()) < n * cols) {
      quantized.codes.resize(n * cols);
      quantized.scales.resize(n * cols / kQuantBlockElements);
      quantized.sums.resize(n * cols / kQuantBlockElements);
    }
    kernels.quantize_input(x.data(), n * cols, quantized.scales.data(), quantized.codes.data(),
                           quantized.sums.data());
    input.scales = quantized.scales.data();
    input.codes = quantized.codes.data();
    input.sums = quantized.sums.data();
  }
  float* out_data = out.data();
  pool.ParallelFor(rows, [&](int64_t row_begin, int64_t row_end, int) {
    int64_t first_row = 0;
    for (const WeightMatrix& matrix : w) {
      const int64_t end_row = first_row + matrix.rows;
      const int64_t begin = std::max(row_begin, first_row);
      const int64_t end = std::min(row_end, end_row);
      if (begin < end) {
        const int64_t row_bytes = DTypeBytes(matrix.dtype, cols).value();
        RowsFor(kernels, matrix.dtype)(out_data, input, matrix.data + (begin - first_row) * row_bytes,
                                       row_bytes, n, rows, cols, begin, end);
      }
      first_row = end_row;
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

namespace {

typedef float Float8 __attribute__((vector_size(32)));
typedef int32_t Int8 __attribute__((vector_size(32)));

// e^x in every lane, for x <= 0 (Softmax's x - max): 0 below -87.33 (where
// e^x leaves the normal floats), NaN for NaN. x = k ln 2 + r with k the
// nearest integer to x / ln 2 and |r| <= ln 2 / 2 (ln 2 in two parts, so
// k ln 2 is exact), e^r by its degree-6 Taylor polynomial (relative error
// below 2e-7 there), times 2^k built in the exponent bits. Within 2 ulp of
// std::exp; 8 lanes at a time where libm's expf took most of a softmax over
// 32000 logits (a sixth of serve's leader).
Float8 ExpOfNonPositive(Float8 x) {
  constexpr float kLowest = -87.33f;
  const Float8 clamped = x < kLowest ? Float8{} + kLowest : x;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const Float8 k = (clamped * 1.44269504f + kRound) - kRound;
  const Float8 r = (clamped - k * 0.693359375f) - k * -2.12194440e-4f;
  Float8 p = Float8{} + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const Int8 exponent = (__builtin_convertvector(k, Int8) + 127) << 23;
  Float8 scale;
  __builtin_memcpy(&scale, &exponent, sizeof scale);
  const Float8 result = p * scale;
  return x < kLowest ? Float8{} : (x != x ? x : result);
}

// y[0, n) += a * x[0, n), 8 lanes at a time, each element as the scalar
// loop computes it: a plain -c opt build (-O2, no -march) left the scalar
// loop unvectorized, as x and y may overlap, and AttendOneHead's weighted sum
// of values took 12% of a 200-token F16 prefill of TinyLlama-4 there.
void AddScaled(float* y, float a, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    Float8 xv, yv;
    __builtin_memcpy(&xv, x + i, sizeof xv);
    __builtin_memcpy(&yv, y + i, sizeof yv);
    yv += a * xv;
    __builtin_memcpy(y + i, &yv, sizeof yv);
  }
  for (; i < n; ++i) y[i] += a * x[i];
}

}  // namespace

void Softmax(std::span<float> x) {
  if (x.empty()) return;
  const float max_value = *std::max_element(x.begin(), x.end());
  const size_t n = x.size();
  Float8 sums{};
  // x[i, i + count) = e^(x - max), count <= 8, added to the sums (padding
  // lanes give 0).
  const auto exponentiate = [&](size_t i, size_t count) {
    Float8 v = Float8{} - INFINITY;
    __builtin_memcpy(&v, x.data() + i, count * sizeof(float));
    v = ExpOfNonPositive(v - max_value);
    __builtin_memcpy(x.data() + i, &v, count * sizeof(float));
    sums += v;
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) exponentiate(i, 8);
  if (i < n) exponentiate(i, n - i);
  const float sum = ((sums[0] + sums[4]) + (sums[2] + sums[6])) + ((sums[1] + sums[5]) + (sums[3] + sums[7]));
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
  for (int64_t s = 0; s <= pos; ++s) AddScaled(out.data(), scores[s], values + s * kv_dim + offset, head_dim);
}

}  // namespace inferno
