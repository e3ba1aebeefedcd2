#include "kernels/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tensor/dtype.h"
#include "tensor/quant_blocks.h"

namespace inferno {
namespace {

const std::byte* AsBytes(const std::vector<float>& v) { return reinterpret_cast<const std::byte*>(v.data()); }

std::vector<float> RandomVector(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(Dot, MatchesDoublePrecisionSumForOddLengths) {
  for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 100, 288, 768}) {
    std::vector<float> a = RandomVector(n, 1), b = RandomVector(n, 2);
    double expected = 0;
    for (int64_t i = 0; i < n; ++i) expected += static_cast<double>(a[i]) * b[i];
    EXPECT_NEAR(Dot(a.data(), b.data(), n), expected, 1e-4) << "n=" << n;
  }
}

TEST(MatMul, MatchesNaiveProduct) {
  const int64_t n = 3, rows = 37, cols = 29;
  std::vector<float> x = RandomVector(n * cols, 3), w = RandomVector(rows * cols, 4), out(n * rows);
  ThreadPool pool(1);
  MatMul(out, x, w, n, rows, cols, pool);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      double expected = 0;
      for (int64_t c = 0; c < cols; ++c) expected += static_cast<double>(x[t * cols + c]) * w[r * cols + c];
      EXPECT_NEAR(out[t * rows + r], expected, 1e-4);
    }
  }
}

// MatMul runs a thread's rows in blocks of about 2^24 multiply-adds, each
// counted as progress (base/progress.h): rows past the first block must use
// their own weights.
TEST(MatMul, MatrixOfSeveralProgressBlocksMatchesNaiveProduct) {
  const int64_t n = 4, rows = 2500, cols = 4096;  // 1024 rows a block
  std::vector<float> x = RandomVector(n * cols, 5), w = RandomVector(rows * cols, 6), out(n * rows);
  ThreadPool pool(1);
  MatMul(out, x, w, n, rows, cols, pool);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r : {int64_t{0}, int64_t{1023}, int64_t{1024}, int64_t{2047}, int64_t{2048}, rows - 1}) {
      double expected = 0;
      for (int64_t c = 0; c < cols; ++c) expected += static_cast<double>(x[t * cols + c]) * w[r * cols + c];
      EXPECT_NEAR(out[t * rows + r], expected, 1e-3) << "position " << t << ", row " << r;
    }
  }
}

TEST(MatMul, BitIdenticalAcrossThreadCountsAndBatching) {
  // Large enough for several cache blocks per thread.
  for (const int64_t cols : {288, 45}) {
    const int64_t n = 5, rows = 301;
    std::vector<float> x = RandomVector(n * cols, 5), w = RandomVector(rows * cols, 6);
    ThreadPool single(1);
    std::vector<float> reference(n * rows);
    MatMul(reference, x, w, n, rows, cols, single);
    for (int threads : {2, 3, 4}) {
      ThreadPool pool(threads);
      std::vector<float> out(n * rows);
      MatMul(out, x, w, n, rows, cols, pool);
      EXPECT_EQ(out, reference) << threads << " threads";
    }
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(reference[r], Dot(w.data() + r * cols, x.data(), cols)) << "row " << r;
    }
    for (int64_t t = 0; t < n; ++t) {
      std::vector<float> row(rows);
      MatMul(row, std::span<const float>(x).subspan(t * cols, cols), w, 1, rows, cols, single);
      EXPECT_TRUE(std::equal(row.begin(), row.end(), reference.begin() + t * rows)) << "batch row " << t;
    }
  }
}

// The CPU's flags as Linux lists them in /proc/cpuinfo, read apart from
// kernels.cc's CPUID checks so that a wrong check or a silent fall-back shows.
std::set<std::string> CpuFlags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    return {std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
  }
  return {};
}

TEST(KernelInstructionSet, IsTheBestTheCpuFlagsAllowOrTheOneAskedFor) {
  const std::set<std::string> flags = CpuFlags();
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  const auto has = [&](std::initializer_list<const char*> names) {
    return std::all_of(names.begin(), names.end(), [&](const char* name) { return flags.count(name) != 0; });
  };
  std::string best = "baseline";
  if (has({"avx2", "fma", "f16c"})) best = "avx2";
#if defined(INFERNO_HAS_AVX512VNNI_KERNELS)  // not in a build with --define=inferno_avx512_kernels=off
  if (has({"avx512f", "avx512bw", "avx512vl", "avx512_vnni", "fma", "f16c"})) best = "avx512vnni";
#endif
  const char* wanted = std::getenv("INFERNO_KERNEL_ISA");
  std::string expected = best;
  if (wanted != nullptr && std::string(wanted) == "baseline") expected = "baseline";
  if (wanted != nullptr && std::string(wanted) == "avx2" && best != "baseline") expected = "avx2";
  EXPECT_EQ(std::string(KernelInstructionSet()), expected)
      << "INFERNO_KERNEL_ISA=" << (wanted != nullptr ? wanted : "(unset)");
}

TEST(RmsNorm, NormalizesToUnitRootMeanSquareTimesWeight) {
  std::vector<float> x = RandomVector(64, 7), weight(64, 2.0f), out(64);
  RmsNorm(out, x, weight, 0.0f);
  double mean_square = 0;
  for (float v : out) mean_square += v * v / 64.0;
  EXPECT_NEAR(mean_square, 4.0, 1e-4);
  EXPECT_GT(out[0] * x[0], 0.0f);
}

TEST(Softmax, SumsToOneAndKeepsOrder) {
  std::vector<float> x = {1.0f, 3.0f, 2.0f};
  Softmax(x);
  EXPECT_NEAR(std::accumulate(x.begin(), x.end(), 0.0), 1.0, 1e-6);
  EXPECT_LT(x[0], x[2]);
  EXPECT_LT(x[2], x[1]);
  EXPECT_NEAR(x[1] / x[0], std::exp(2.0f), 1e-4);
  std::vector<float> large = {1000.0f, 1000.0f};
  Softmax(large);
  EXPECT_FLOAT_EQ(large[0], 0.5f);
}

TEST(Softmax, MatchesDoublePrecisionOverTheWholeRange) {
  // 32003 values (not a multiple of 8) from 10 down to -110.
  std::vector<float> x(32003);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 10.0f - 120.0f * static_cast<float>(i) / (x.size() - 1);
  const std::vector<float> logits = x;
  std::vector<double> expected(x.size());
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += expected[i] = std::exp(static_cast<double>(x[i]) - 10.0);
  Softmax(x);
  for (size_t i = 0; i < x.size(); ++i) {
    // The float sum of 32003 terms is within 1e-5; each exponential within
    // a few ulp, seen in the ratio to the first (the sum cancels) where the
    // quotient is a normal float.
    ASSERT_NEAR(x[i], expected[i] / sum, 1e-5 * expected[i] / sum + 1e-37) << "element " << i;
    const double exact_ratio = std::exp(static_cast<double>(logits[i]) - static_cast<double>(logits[0]));
    if (logits[i] - logits[0] > -80.0f) {
      ASSERT_NEAR(x[i] / x[0], exact_ratio, 5e-7 * exact_ratio) << "element " << i;
    } else if (logits[i] - logits[0] < -87.5f) {
      ASSERT_LE(x[i], 1e-37f) << "element " << i;  // e^x below the normal floats
    }
  }
  std::vector<float> with_nan = {1.0f, NAN, 2.0f};
  Softmax(with_nan);
  EXPECT_TRUE(std::isnan(with_nan[1]));
}

TEST(MatMul, RowsInSeveralBlocksGiveTheSameBitsAsOneMatrix) {
  const int64_t n = 3, cols = 37, rows = 23;
  const std::vector<float> x = RandomVector(n * cols, 11);
  const std::vector<float> w = RandomVector(rows * cols, 12);
  ThreadPool pool(3);
  std::vector<float> whole(n * rows), blocked(n * rows);
  MatMul(whole, x, w, n, rows, cols, pool);
  // Blocks of 5, 1 and 17 rows, copied apart so they are not one array.
  const std::vector<float> first(w.begin(), w.begin() + 5 * cols);
  const std::vector<float> second(w.begin() + 5 * cols, w.begin() + 6 * cols);
  const std::vector<float> third(w.begin() + 6 * cols, w.end());
  const WeightMatrix blocks[] = {
      {DType::kF32, AsBytes(first), 5}, {DType::kF32, AsBytes(second), 1}, {DType::kF32, AsBytes(third), 17}};
  MatMul(blocked, x, blocks, n, rows, cols, pool);
  EXPECT_EQ(blocked, whole);
}

// `values` (rows, cols) stored as `dtype`.
std::vector<std::byte> Stored(DType dtype, const std::vector<float>& values) {
  std::vector<std::byte> bytes(DTypeBytes(dtype, static_cast<int64_t>(values.size())).value());
  EXPECT_TRUE(ConvertFromF32(dtype, values, bytes.data()).ok());
  return bytes;
}

// The f32 values `dtype` holds for `values`.
std::vector<float> Widened(DType dtype, const std::vector<float>& values) {
  const std::vector<std::byte> bytes = Stored(dtype, values);
  std::vector<float> widened(values.size());
  ConvertToF32(dtype, bytes.data(), widened);
  return widened;
}

class TypedMatMul : public testing::TestWithParam<DType> {};

TEST_P(TypedMatMul, BitIdenticalAcrossThreadCountsBatchingAndRowGrouping) {
  const DType dtype = GetParam();
  for (const int64_t cols : {288, 64}) {
    const int64_t n = 5, rows = 301;
    const std::vector<float> x = RandomVector(n * cols, 5);
    const std::vector<std::byte> w = Stored(dtype, RandomVector(rows * cols, 6));
    const int64_t row_bytes = DTypeBytes(dtype, cols).value();
    const WeightMatrix matrix[] = {{dtype, w.data(), rows}};
    ThreadPool single(1);
    std::vector<float> reference(n * rows);
    MatMul(reference, x, matrix, n, rows, cols, single);
    for (int threads : {2, 3}) {
      ThreadPool pool(threads);
      std::vector<float> out(n * rows);
      MatMul(out, x, matrix, n, rows, cols, pool);
      EXPECT_EQ(out, reference) << threads << " threads";
    }
    for (int64_t t = 0; t < n; ++t) {
      std::vector<float> row(rows);
      MatMul(row, std::span<const float>(x).subspan(t * cols, cols), matrix, 1, rows, cols, single);
      EXPECT_TRUE(std::equal(row.begin(), row.end(), reference.begin() + t * rows)) << "batch row " << t;
    }
    // One row at a time (not in a group of 4): the same bits.
    for (int64_t r : {0, 3, 299, 300}) {
      const WeightMatrix one[] = {{dtype, w.data() + r * row_bytes, 1}};
      float out;
      MatMul({&out, 1}, std::span<const float>(x).first(cols), one, 1, 1, cols, single);
      EXPECT_EQ(out, reference[r]) << "row " << r;
    }
  }
}

// The bit patterns of `values`, so that a test of exactness also tells -0
// from +0 and compares NaNs.
std::vector<uint32_t> Bits(std::span<const float> values) {
  std::vector<uint32_t> bits(values.size());
  std::memcpy(bits.data(), values.data(), values.size() * sizeof(float));
  return bits;
}

TEST_P(TypedMatMul, EveryBatchSizeGivesEachPositionTheMatrixVectorBits) {
  // Batches of 1..64 positions (the transformer's largest, kMaxPositionsPerCall)
  // go through the matrix-matrix tiles, whole and partial; rows not a multiple
  // of any tile's rows; for the widened types, columns that end in a whole
  // and a partial 8-vector after the 32-element steps, and columns over more
  // than one stretch of AVX2's chain-by-chain prefill tile (1100 > 2 x 512).
  const DType dtype = GetParam();
  constexpr int64_t kMaxBatch = 64;
  const bool blocks = DTypeBlockElements(dtype) > 1;
  for (const int64_t cols : blocks ? std::vector<int64_t>{160, 32} : std::vector<int64_t>{1100, 173, 64, 5}) {
    const int64_t rows = 23;
    const std::vector<float> x = RandomVector(kMaxBatch * cols, 21);
    const std::vector<std::byte> w = Stored(dtype, RandomVector(rows * cols, 22));
    const WeightMatrix matrix[] = {{dtype, w.data(), rows}};
    ThreadPool single(1), pair(2);
    std::vector<float> vector_products(kMaxBatch * rows);
    for (int64_t t = 0; t < kMaxBatch; ++t) {
      MatMul(std::span<float>(vector_products).subspan(t * rows, rows),
             std::span<const float>(x).subspan(t * cols, cols), matrix, 1, rows, cols, single);
    }
    const std::vector<uint32_t> expected = Bits(vector_products);
    for (int64_t n = 1; n <= kMaxBatch; ++n) {
      // Batches starting at position 64 - n, so every position is at some
      // place in some tile.
      const int64_t first = kMaxBatch - n;
      std::vector<float> out(n * rows);
      MatMul(out, std::span<const float>(x).subspan(first * cols, n * cols), matrix, n, rows, cols,
             n % 2 == 0 ? single : pair);
      const std::vector<uint32_t> got = Bits(out);
      ASSERT_TRUE(std::equal(got.begin(), got.end(), expected.begin() + first * rows))
          << DTypeName(dtype) << " " << KernelInstructionSet() << ": batch of " << n << ", cols " << cols;
    }
  }
}

TEST_P(TypedMatMul, CloseToTheProductOfDequantizedWeights) {
  const DType dtype = GetParam();
  const int64_t n = 2, rows = 19, cols = 96;
  const std::vector<float> x = RandomVector(n * cols, 13), values = RandomVector(rows * cols, 14);
  const std::vector<std::byte> w = Stored(dtype, values);
  const std::vector<float> widened = Widened(dtype, values);
  const WeightMatrix matrix[] = {{dtype, w.data(), rows}};
  ThreadPool pool(2);
  std::vector<float> out(n * rows);
  MatMul(out, x, matrix, n, rows, cols, pool);
  // Block types also quantize x to 8 bits: |error| <= sum |w| * step(x) / 2,
  // step(x) <= 1/127 for |x| <= 1.
  const double x_error = DTypeBlockElements(dtype) > 1 ? 0.5 / 127 : 0.0;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      double expected = 0, bound = 1e-5;
      for (int64_t c = 0; c < cols; ++c) {
        expected += static_cast<double>(x[t * cols + c]) * widened[r * cols + c];
        bound += std::fabs(widened[r * cols + c]) * x_error;
      }
      EXPECT_NEAR(out[t * rows + r], expected, bound) << DTypeName(dtype) << " row " << r;
    }
  }
}

// The types of blocks of at most 32 elements (the cases above use rows of 32
// and 288 columns; the super-block types, from random blocks of every code
// pattern, are in quant_rows_test.cc).
std::vector<DType> DTypesOfSmallBlocks() {
  std::vector<DType> dtypes;
  for (DType dtype : kAllDTypes) {
    if (DTypeBlockElements(dtype) <= 32) dtypes.push_back(dtype);
  }
  return dtypes;
}

INSTANTIATE_TEST_SUITE_P(EveryDType, TypedMatMul, testing::ValuesIn(DTypesOfSmallBlocks()),
                         [](const testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

TEST(MatMul, Bf16AndF16RowsEqualF32OnTheWidenedWeights) {
  const int64_t n = 3, rows = 21, cols = 45;  // a partial vector at the end of each row
  const std::vector<float> x = RandomVector(n * cols, 15), values = RandomVector(rows * cols, 16);
  ThreadPool pool(2);
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const std::vector<std::byte> w = Stored(dtype, values);
    const std::vector<float> widened = Widened(dtype, values);
    const WeightMatrix matrix[] = {{dtype, w.data(), rows}};
    std::vector<float> typed(n * rows), f32(n * rows);
    MatMul(typed, x, matrix, n, rows, cols, pool);
    MatMul(f32, x, widened, n, rows, cols, pool);
    EXPECT_EQ(typed, f32) << DTypeName(dtype);
  }
}

TEST(MatMul, BlockTypesGiveTheIntegerDotProductOfTheCodesScaled) {
  // x = 1..32 in block 0 (scale 32/127: codes round(k * 127/32)), weights
  // of one Q8_0 block with d = 0.5 and codes 1 -> so the product is known.
  std::vector<float> x(32);
  for (int k = 0; k < 32; ++k) x[k] = static_cast<float>(k + 1);
  BlockQ8_0 block{};
  block.d = 0x3800;  // 0.5
  for (int k = 0; k < 32; ++k) block.qs[k] = static_cast<int8_t>(k % 2 == 0 ? 1 : -1);
  const float x_scale = 32.0f / 127.0f;
  int64_t integer = 0;
  for (int k = 0; k < 32; ++k) integer += (k % 2 == 0 ? 1 : -1) * std::lrintf(x[k] / x_scale);
  const WeightMatrix matrix[] = {{DType::kQ8_0, reinterpret_cast<const std::byte*>(&block), 1}};
  ThreadPool pool(1);
  float out;
  MatMul({&out, 1}, x, matrix, 1, 1, 32, pool);
  EXPECT_NEAR(out, 0.5 * x_scale * static_cast<double>(integer), 1e-6);
}

TEST(MatMul, XCodesRoundHalfToEven) {
  // max |x| = 127, so x's scale is 1 and its codes are x rounded to an
  // integer, ties to even (as lrintf); an identity matrix of Q8_0 rows
  // with d = 1 gives each code back as a product.
  const float values[] = {127.0f, -127.0f, 0.5f,        1.5f,   2.5f,   -2.5f,   3.5f,  -3.5f,
                          126.5f, -126.5f, 0.49999997f, -0.5f,  -1.5f,  4.5f,    5.5f,  6.49f,
                          -6.51f, 7.0f,    -8.0f,       100.5f, 101.5f, -100.5f, -0.0f, 0.0f,
                          9.25f,  10.75f,  11.5f,       -11.5f, 12.5f,  -12.5f,  13.5f, -13.5f};
  const std::vector<float> x(std::begin(values), std::end(values));
  std::vector<BlockQ8_0> identity(32);
  for (int r = 0; r < 32; ++r) {
    identity[r].d = 0x3C00;  // 1.0
    for (int k = 0; k < 32; ++k) identity[r].qs[k] = static_cast<int8_t>(k == r ? 1 : 0);
  }
  const WeightMatrix matrix[] = {{DType::kQ8_0, reinterpret_cast<const std::byte*>(identity.data()), 32}};
  ThreadPool pool(1);
  std::vector<float> codes(32);
  MatMul(codes, x, matrix, 1, 32, 32, pool);
  for (int k = 0; k < 32; ++k) {
    EXPECT_EQ(codes[k], static_cast<float>(std::lrintf(values[k]))) << "x = " << values[k];
  }
}

TEST(MatMul, InputQuantizedOnSeveralThreadsGivesTheOneThreadBits) {
  // x large enough that its rows are quantized on several threads, for
  // blocks of 32 (Q8_0) and super-blocks (Q4_K) in one product.
  const int64_t n = 40, cols = 1024, rows = 7;
  const std::vector<float> x = RandomVector(n * cols, 41);
  const std::vector<std::byte> q8 = Stored(DType::kQ8_0, RandomVector(rows * cols, 42));
  const std::vector<std::byte> q4k = Stored(DType::kQ4_K, RandomVector(rows * cols, 43));
  const WeightMatrix both[] = {{DType::kQ8_0, q8.data(), rows}, {DType::kQ4_K, q4k.data(), rows}};
  std::vector<float> reference(n * 2 * rows);
  for (int64_t t = 0; t < n; ++t) {
    ThreadPool single(1);
    MatMul(std::span<float>(reference).subspan(t * 2 * rows, 2 * rows),
           std::span<const float>(x).subspan(t * cols, cols), both, 1, 2 * rows, cols, single);
  }
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> out(n * 2 * rows);
    MatMul(out, x, both, n, 2 * rows, cols, pool);
    EXPECT_EQ(Bits(out), Bits(reference)) << threads << " threads";
  }
}

TEST(MatMul, NonFiniteInputGivesNanForBlockTypes) {
  std::vector<float> x(32, 1.0f);
  x[3] = INFINITY;
  const std::vector<std::byte> w = Stored(DType::kQ8_0, RandomVector(32, 17));
  const WeightMatrix matrix[] = {{DType::kQ8_0, w.data(), 1}};
  ThreadPool pool(1);
  float out = 0;
  MatMul({&out, 1}, x, matrix, 1, 1, 32, pool);
  EXPECT_TRUE(std::isnan(out));
}

TEST(MatMul, MixedTypesInOneProductMatchEachAlone) {
  const int64_t n = 2, cols = 64;
  const std::vector<float> x = RandomVector(n * cols, 18);
  const std::vector<std::byte> q4 = Stored(DType::kQ4_0, RandomVector(3 * cols, 19));
  const std::vector<std::byte> bf16 = Stored(DType::kBF16, RandomVector(2 * cols, 20));
  ThreadPool pool(2);
  const WeightMatrix both[] = {{DType::kQ4_0, q4.data(), 3}, {DType::kBF16, bf16.data(), 2}};
  std::vector<float> mixed(n * 5), first(n * 3), second(n * 2);
  MatMul(mixed, x, both, n, 5, cols, pool);
  MatMul(first, x, std::span<const WeightMatrix>(both, 1), n, 3, cols, pool);
  MatMul(second, x, std::span<const WeightMatrix>(both + 1, 1), n, 2, cols, pool);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = 0; r < 3; ++r) EXPECT_EQ(mixed[t * 5 + r], first[t * 3 + r]);
    for (int64_t r = 0; r < 2; ++r) EXPECT_EQ(mixed[t * 5 + 3 + r], second[t * 2 + r]);
  }
}

TEST(Rope, PositionZeroIsIdentityAndRotationKeepsPairNorms) {
  const int64_t head_dim = 8, seq_len = 4;
  std::vector<float> cos_table(seq_len * head_dim / 2), sin_table(seq_len * head_dim / 2);
  const std::vector<float> inverse_frequencies = {1.0f, 0.1f, 0.01f, 0.001f};
  FillRopeTables(cos_table, sin_table, seq_len, inverse_frequencies);
  const std::vector<float> original = RandomVector(2 * head_dim, 8);
  std::vector<float> x = original;
  ApplyRope(x, head_dim, std::span<const float>(cos_table).first(4),
            std::span<const float>(sin_table).first(4));
  EXPECT_EQ(x, original);
  ApplyRope(x, head_dim, std::span<const float>(cos_table).subspan(12, 4),
            std::span<const float>(sin_table).subspan(12, 4));
  EXPECT_NE(x, original);
  // Pairs are (i, i + head_dim / 2) within each head.
  const int64_t half = head_dim / 2;
  for (int64_t head = 0; head < 2 * head_dim; head += head_dim) {
    for (int64_t i = head; i < head + half; ++i) {
      EXPECT_NEAR(std::hypot(x[i], x[i + half]), std::hypot(original[i], original[i + half]), 1e-5);
    }
  }
  // Pair 0 turns by exactly the position (frequency 1).
  const double turned = std::atan2(x[half], x[0]) - std::atan2(original[half], original[0]);
  EXPECT_NEAR(std::remainder(turned - 3.0, 2 * M_PI), 0.0, 1e-4);
}

TEST(SwiGlu, IsSiluOfGateTimesUp) {
  const std::vector<float> gate_up = {0.0f, 1.0f, -2.0f, 3.0f, 5.0f, 7.0f};
  std::vector<float> out(3);
  SwiGlu(out, gate_up);
  EXPECT_FLOAT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 1.0f / (1.0f + std::exp(-1.0f)) * 5.0f, 1e-6);
  EXPECT_NEAR(out[2], -2.0f / (1.0f + std::exp(2.0f)) * 7.0f, 1e-6);
}

TEST(AttendOneHead, FirstPositionReturnsItsValueAndEqualKeysAverageValues) {
  const int64_t head_dim = 4, kv_dim = 8, kv_head = 1;
  std::vector<float> keys(3 * kv_dim, 0.5f), values(3 * kv_dim), q = {1, 2, 3, 4}, out(head_dim), scores(3);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const float divisor = std::sqrt(static_cast<float>(head_dim));
  AttendOneHead(out, q, keys.data(), values.data(), {0, 0, 3}, kv_dim, kv_head, head_dim, divisor, scores);
  for (int64_t i = 0; i < head_dim; ++i) EXPECT_FLOAT_EQ(out[i], values[kv_head * head_dim + i]);
  AttendOneHead(out, q, keys.data(), values.data(), {0, 2, 3}, kv_dim, kv_head, head_dim, divisor, scores);
  for (int64_t i = 0; i < head_dim; ++i) {
    const float mean = (values[4 + i] + values[12 + i] + values[20 + i]) / 3.0f;
    EXPECT_NEAR(out[i], mean, 1e-5);
  }
}

TEST(AttendOneHead, MatchesDoublePrecisionForWholeAndPartialVectors) {
  // 64: whole 8-float vectors; 67: a partial one at the end of each row.
  for (const int64_t head_dim : {64, 67}) {
    const int64_t kv_dim = 3 * head_dim, kv_head = 1, seq_len = 41, offset = kv_head * head_dim;
    const std::vector<float> keys = RandomVector(seq_len * kv_dim, 21),
                             values = RandomVector(seq_len * kv_dim, 22);
    std::vector<float> q = RandomVector(head_dim, 23), out(head_dim), scores(seq_len);
    for (float& v : q) v *= 8.0f;  // scores spread over a few units, so the softmax is not flat
    for (const int64_t pos : {0, 1, 9, 40}) {
      AttendOneHead(out, q, keys.data(), values.data(), {0, pos, seq_len}, kv_dim, kv_head, head_dim,
                    std::sqrt(static_cast<float>(head_dim)), scores);
      std::vector<double> weights(pos + 1);
      double max_score = -INFINITY, sum = 0;
      for (int64_t s = 0; s <= pos; ++s) {
        double dot = 0;
        for (int64_t i = 0; i < head_dim; ++i)
          dot += static_cast<double>(q[i]) * keys[s * kv_dim + offset + i];
        weights[s] = dot / std::sqrt(static_cast<double>(head_dim));
        max_score = std::max(max_score, weights[s]);
      }
      for (double& w : weights) sum += w = std::exp(w - max_score);
      for (int64_t i = 0; i < head_dim; ++i) {
        double expected = 0;
        for (int64_t s = 0; s <= pos; ++s) expected += weights[s] / sum * values[s * kv_dim + offset + i];
        ASSERT_NEAR(out[i], expected, 1e-5)
            << "head_dim " << head_dim << ", pos " << pos << ", element " << i;
      }
    }
  }
}

TEST(AttendOneHead, WindowInARingEqualsTheSamePositionsStoredInOrder) {
  // Positions [first, last] of a sequence kept in a ring of `capacity` rows
  // (position p in row p % capacity) give the bits of the same positions
  // stored in order, with a divisor other than sqrt(head_dim).
  const int64_t head_dim = 16, kv_dim = 2 * head_dim, kv_head = 1, capacity = 7, first = 12, last = 17;
  const int64_t positions = last - first + 1;
  const std::vector<float> ordered_keys = RandomVector(positions * kv_dim, 31),
                           ordered_values = RandomVector(positions * kv_dim, 32);
  std::vector<float> ring_keys(capacity * kv_dim, NAN), ring_values(capacity * kv_dim, NAN);
  for (int64_t p = first; p <= last; ++p) {
    std::copy_n(ordered_keys.begin() + (p - first) * kv_dim, kv_dim,
                ring_keys.begin() + (p % capacity) * kv_dim);
    std::copy_n(ordered_values.begin() + (p - first) * kv_dim, kv_dim,
                ring_values.begin() + (p % capacity) * kv_dim);
  }
  std::vector<float> q = RandomVector(head_dim, 33), scores(capacity), in_ring(head_dim), in_order(head_dim);
  AttendOneHead(in_ring, q, ring_keys.data(), ring_values.data(), {first, last, capacity}, kv_dim, kv_head,
                head_dim, 3.0f, scores);
  AttendOneHead(in_order, q, ordered_keys.data(), ordered_values.data(), {0, positions - 1, positions},
                kv_dim, kv_head, head_dim, 3.0f, scores);
  for (int64_t i = 0; i < head_dim; ++i) {
    ASSERT_FALSE(std::isnan(in_ring[i])) << "read a row outside the window";
    EXPECT_EQ(in_ring[i], in_order[i]) << i;
  }
}

TEST(GeGlu, MatchesTheTanhGeluTimesUp) {
  const std::vector<float> gate_up = {0.0f, 1.0f, -2.0f, 3.0f, 5.0f, 7.0f};
  std::vector<float> out(3);
  GeGlu(out, gate_up);
  const auto gelu = [](double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(out[i], gelu(gate_up[i]) * gate_up[3 + i], 1e-5) << i;
}

TEST(RmsNorm, WeightOffsetOneScalesByOnePlusWeight) {
  const std::vector<float> x = {1.0f, -2.0f, 3.0f}, weight = {0.5f, -0.25f, 0.0f};
  std::vector<float> plain(3), offset(3);
  RmsNorm(plain, x, std::vector<float>{1.5f, 0.75f, 1.0f}, 1e-6f);
  RmsNorm(offset, x, weight, 1e-6f, 1.0f);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(offset[i], plain[i]) << i;
}

TEST(AttendOneHead, ReadsNeitherLaterPositionsNorOtherHeads) {
  const int64_t head_dim = 64, kv_dim = 2 * head_dim, kv_head = 1, seq_len = 12, pos = 6;
  std::vector<float> keys = RandomVector(seq_len * kv_dim, 24), values = RandomVector(seq_len * kv_dim, 25);
  const std::vector<float> q = RandomVector(head_dim, 26);
  std::vector<float> first(head_dim), second(head_dim), scores(seq_len);
  const float divisor = std::sqrt(static_cast<float>(head_dim));
  AttendOneHead(first, q, keys.data(), values.data(), {0, pos, seq_len}, kv_dim, kv_head, head_dim, divisor,
                scores);
  for (int64_t i = 0; i < seq_len * kv_dim; ++i) {
    if (i / kv_dim > pos || i % kv_dim < kv_head * head_dim) keys[i] = values[i] = NAN;
  }
  AttendOneHead(second, q, keys.data(), values.data(), {0, pos, seq_len}, kv_dim, kv_head, head_dim, divisor,
                scores);
  EXPECT_EQ(second, first);
}

}  // namespace
}  // namespace inferno
