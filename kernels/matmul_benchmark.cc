// MatMul throughput per weight type on the TinyLlama-1.1B shapes and a
// Qwen3-30B-A3B expert's (768 hidden units, dim 2048): the
// matrix-vector product of decode (n = 1, bound by reading the weights:
// reported as weight GB/s) and the matrix-matrix product of prefill (n = 64
// positions: reported as GFLOP/s, 2 flops per multiply-add), and the
// stories15M shape's at 8, 16 and 64 positions. The matrix is
// copied until the copies take kStreamBytes, and the calls go round them, so
// every call reads its weights from memory as decode does in a model larger
// than the caches (a single matrix of these shapes fits the L3). Args: the
// type (index into kAllDTypes), rows, cols, n. One thread; the kernels are
// those KernelInstructionSet() names (INFERNO_KERNEL_ISA=avx2|baseline asks
// for less).
//
//   bazel run -c opt //kernels:matmul_benchmark -- --benchmark_repetitions=3
#include <algorithm>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "tensor/dtype.h"

namespace inferno {
namespace {

constexpr int64_t kStreamBytes = 256 << 20;

void BM_MatMul(benchmark::State& state) {
  const DType dtype = kAllDTypes[state.range(0)];
  const int64_t rows = state.range(1), cols = state.range(2), n = state.range(3);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(n * cols));
  for (float& v : values) v = dist(rng);
  for (float& v : x) v = dist(rng);
  const int64_t bytes = DTypeBytes(dtype, rows * cols).value();
  const int64_t copies = (kStreamBytes + bytes - 1) / bytes;
  std::vector<std::byte> w(static_cast<size_t>(bytes * copies));
  CHECK(ConvertFromF32(dtype, values, w.data()).ok());
  for (int64_t c = 1; c < copies; ++c) std::copy_n(w.data(), bytes, w.data() + c * bytes);
  std::vector<float> out(static_cast<size_t>(n * rows));
  ThreadPool pool(1);
  int64_t next = 0;
  for (auto _ : state) {
    const WeightMatrix matrix[] = {{dtype, w.data() + next * bytes, rows}};
    MatMul(out, x, matrix, n, rows, cols, pool);
    benchmark::DoNotOptimize(out.data());
    next = (next + 1) % copies;
  }
  state.SetLabel(std::string(DTypeName(dtype)) + " " + KernelInstructionSet());
  const double calls = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] =
      benchmark::Counter(calls * static_cast<double>(bytes) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(calls * 2.0 * static_cast<double>(n * rows * cols) / 1e9,
                                                 benchmark::Counter::kIsRate);
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1, 64}) {
    for (int64_t dtype = 0; dtype < static_cast<int64_t>(std::size(kAllDTypes)); ++dtype) {
      b->Args({dtype, 5632, 2048, n});  // gate or up
      b->Args({dtype, 2048, 5632, n});  // down
      b->Args({dtype, 1536, 2048, n});  // a Qwen3-30B-A3B expert's gate and up
      b->Args({dtype, 2048, 768, n});   // its down
    }
  }
}
// The stories15M shape's products (dim 288, hidden 768, vocab 32000; F32
// and Q8_0) at 8 positions, a batched decode of 8 streams
// (tools/serve_bench.sh), and at 16 and 64: where the AVX2 F32 tiles change.
void SmallModelShapes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {8, 16, 64}) {
    for (DType dtype : {DType::kF32, DType::kQ8_0}) {
      const int64_t index =
          std::find(std::begin(kAllDTypes), std::end(kAllDTypes), dtype) - std::begin(kAllDTypes);
      b->Args({index, 1536, 288, n});   // gate and up
      b->Args({index, 288, 768, n});    // down
      b->Args({index, 32000, 288, n});  // the classifier
    }
  }
}
BENCHMARK(BM_MatMul)->Apply(Shapes)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatMul)->Apply(SmallModelShapes)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace inferno

BENCHMARK_MAIN();
