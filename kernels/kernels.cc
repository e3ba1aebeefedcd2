#include "kernels/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numbers>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <glog/logging.h>

#include "base/progress.h"
#include "kernels/isa_kernels.h"
#include "tensor/k_quant_blocks.h"
#include "tensor/quant_blocks.h"

namespace inferno {
namespace {

// How many multiply-adds of a MatMul count as one unit of progress (a few
// milliseconds on one core).
constexpr int64_t kMultiplyAddsPerProgress = int64_t{1} << 24;

using isa_internal::IsaKernels;
using matmul_internal::InputRows;
using matmul_internal::MatMulKernels;
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
    if (wanted == "baseline") return isa_internal::BaselineKernels();
#if defined(__x86_64__)
    __builtin_cpu_init();
#if defined(INFERNO_HAS_AVX512VNNI_KERNELS)  // not in a build with --define=inferno_avx512_kernels=off
    if (wanted != "avx2" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
        __builtin_cpu_supports("fma") && HasF16c()) {
      return isa_internal::Avx512VnniKernels();
    }
#endif
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c()) {
      return isa_internal::Avx2Kernels();
    }
#endif
    return isa_internal::BaselineKernels();
  }();
  return kernels;
}

RowsFunction RowsFor(const MatMulKernels& kernels, DType dtype) {
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
    case DType::kQ4_1:
      return kernels.q4_1;
    case DType::kQ5_0:
      return kernels.q5_0;
    case DType::kQ5_1:
      return kernels.q5_1;
    case DType::kIQ4_NL:
      return kernels.iq4_nl;
    case DType::kQ2_K:
      return kernels.q2_k;
    case DType::kQ3_K:
      return kernels.q3_k;
    case DType::kQ4_K:
      return kernels.q4_k;
    case DType::kQ5_K:
      return kernels.q5_k;
    case DType::kQ6_K:
      return kernels.q6_k;
    case DType::kIQ4_XS:
      return kernels.iq4_xs;
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

// x quantized to 8-bit blocks of one size (32 or 256), per calling thread
// and size: grows to the largest x seen, then is reused (no allocation per
// token). The sums of 32 codes only for blocks of 32 (the Q8_0/Q4_0 AVX-512
// lanes read them). Rows of x are quantized independently of each other, so
// they may be split among threads.
struct QuantizedInput {
  int64_t block = 0;
  std::vector<float> scales;
  std::vector<int8_t> codes;
  std::vector<int32_t> sums;
  std::vector<int16_t> half_sums;

  // Room for `count` values in blocks of `block_elements`.
  void Reserve(int64_t count, int64_t block_elements) {
    block = block_elements;
    if (static_cast<int64_t>(codes.size()) < count) {
      codes.resize(count);
      scales.resize(count / block);
      if (block == kQuantBlockElements) sums.resize(count / kQuantBlockElements);
      half_sums.resize(count / 16);
    }
  }
  // Rows [begin, end) of x (rows of `cols` values, a multiple of `block`).
  // Precondition: Reserve for at least end * cols values.
  void Quantize(const MatMulKernels& kernels, const float* x, int64_t cols, int64_t begin, int64_t end) {
    const int64_t first = begin * cols;
    kernels.quantize_input(x + first, (end - begin) * cols, block, scales.data() + first / block,
                           codes.data() + first,
                           block == kQuantBlockElements ? sums.data() + first / kQuantBlockElements : nullptr,
                           half_sums.data() + first / 16);
  }
};

// Below this many values of x, its quantization runs on the calling thread
// alone (a decode step's vector: a few microseconds, less than waking a
// worker); above, its rows are split among the pool's threads.
constexpr int64_t kParallelQuantizeValues = int64_t{1} << 15;

}  // namespace

float Dot(const float* a, const float* b, int64_t n) { return Kernels().matmul.dot(a, b, n); }

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
  const MatMulKernels& kernels = Kernels().matmul;
  int64_t stacked_rows = 0;
  bool blocks = false, super_blocks = false;
  for (const WeightMatrix& matrix : w) {
    stacked_rows += matrix.rows;
    blocks = blocks || DTypeBlockElements(matrix.dtype) == kQuantBlockElements;
    super_blocks = super_blocks || DTypeBlockElements(matrix.dtype) == kSuperBlockElements;
  }
  DCHECK_GE(stacked_rows, rows);
  InputRows input{.values = x.data()};
  // x quantized for each block size in the product, kept per calling thread.
  // (References: a lambda names a thread_local object by name as the running
  // thread's own, so the workers reach the caller's through these.)
  thread_local QuantizedInput thread_of_32, thread_of_256;
  QuantizedInput& of_32 = thread_of_32;
  QuantizedInput& of_256 = thread_of_256;
  const auto reserve = [&](QuantizedInput& quantized, int64_t block) {
    CHECK_EQ(cols % block, 0) << "a matrix of blocks of " << block << " with " << cols << " columns";
    quantized.Reserve(n * cols, block);
  };
  if (blocks) reserve(of_32, kQuantBlockElements);
  if (super_blocks) reserve(of_256, kSuperBlockElements);
  const auto quantize_rows = [&](int64_t begin, int64_t end) {
    if (blocks) of_32.Quantize(kernels, x.data(), cols, begin, end);
    if (super_blocks) of_256.Quantize(kernels, x.data(), cols, begin, end);
  };
  if ((blocks || super_blocks) && n * cols >= kParallelQuantizeValues) {
    pool.ParallelFor(n, [&](int64_t begin, int64_t end, int) { quantize_rows(begin, end); });
  } else if (blocks || super_blocks) {
    quantize_rows(0, n);
  }
  if (blocks) {
    input.scales = of_32.scales.data();
    input.codes = of_32.codes.data();
    input.sums = of_32.sums.data();
    input.half_sums = of_32.half_sums.data();
  }
  if (super_blocks) {
    input.super_scales = of_256.scales.data();
    input.super_codes = of_256.codes.data();
    input.super_half_sums = of_256.half_sums.data();
  }
  float* out_data = out.data();
  pool.ParallelFor(rows, [&](int64_t row_begin, int64_t row_end, int) {
    int64_t first_row = 0;
    for (const WeightMatrix& matrix : w) {
      const int64_t end_row = first_row + matrix.rows;
      const int64_t begin = std::max(row_begin, first_row);
      const int64_t end = std::min(row_end, end_row);
      const int64_t row_bytes = DTypeBytes(matrix.dtype, cols).value();
      // In blocks of about kMultiplyAddsPerProgress, each counted as
      // progress, so a long prefill's matrix is never taken for a hang.
      const int64_t block = std::max<int64_t>(1, kMultiplyAddsPerProgress / std::max<int64_t>(1, n * cols));
      for (int64_t block_begin = begin; block_begin < end; block_begin += block) {
        const int64_t block_end = std::min(end, block_begin + block);
        RowsFor(kernels, matrix.dtype)(out_data, input, matrix.data + (block_begin - first_row) * row_bytes,
                                       row_bytes, n, rows, cols, block_begin, block_end);
        ProgressAdvanced();
      }
      first_row = end_row;
    }
  });
}

void RmsNorm(std::span<float> out, std::span<const float> x, std::span<const float> weight, float eps,
             float weight_offset) {
  const int64_t dim = static_cast<int64_t>(x.size());
  DCHECK_EQ(out.size(), x.size());
  DCHECK_EQ(weight.size(), x.size());
  float mean_square = Dot(x.data(), x.data(), dim) / static_cast<float>(dim);
  const float scale = 1.0f / std::sqrt(mean_square + eps);
  for (int64_t i = 0; i < dim; ++i) out[i] = (weight_offset + weight[i]) * (scale * x[i]);
}

void Softmax(std::span<float> x) { Kernels().vector.softmax(x.data(), static_cast<int64_t>(x.size())); }

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

void GeGlu(std::span<float> out, std::span<const float> gate_up) {
  const size_t hidden = out.size();
  DCHECK_EQ(gate_up.size(), 2 * hidden);
  const float* gate = gate_up.data();
  const float* up = gate_up.data() + hidden;
  // 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)): glibc's expf took a third of
  // tanhf's time (tanhf goes through expm1f), which was 7% of a Gemma 3
  // prefill.
  const float minus_2_sqrt_2_over_pi = -2.0f * std::sqrt(2.0f / std::numbers::pi_v<float>);
  for (size_t i = 0; i < hidden; ++i) {
    const float x = gate[i];
    const float gelu = x / (1.0f + std::exp(minus_2_sqrt_2_over_pi * (x + 0.044715f * x * x * x)));
    out[i] = gelu * up[i];
  }
}

void AttendOneHead(std::span<float> out, std::span<const float> q, const float* keys, const float* values,
                   AttentionSpan span, int64_t kv_dim, int64_t kv_head, int64_t head_dim, float score_divisor,
                   std::span<float> scores) {
  const int64_t positions = span.last - span.first + 1;
  DCHECK_GE(static_cast<int64_t>(out.size()), head_dim);
  DCHECK_GE(static_cast<int64_t>(q.size()), head_dim);
  DCHECK(span.first >= 0 && positions >= 1 && positions <= span.capacity);
  DCHECK_GE(static_cast<int64_t>(scores.size()), positions);
  const int64_t offset = kv_head * head_dim;
  Kernels().vector.attend_one_head(out.data(), q.data(), keys + offset, values + offset,
                                   span.first % span.capacity, positions, span.capacity, kv_dim, head_dim,
                                   score_divisor, scores.data());
}

}  // namespace inferno
