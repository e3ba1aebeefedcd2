// MatMul over the block types beyond Q8_0 and Q4_0 (kernels/quant_rows.inc),
// on weights of random blocks: every code pattern, scales and mins of both
// signs. Each instruction set this CPU has runs it (kernels/BUILD).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/kernels.h"
#include "tensor/dtype.h"
#include "tensor/float16.h"
#include "tensor/k_quant_blocks.h"
#include "tensor/quant_blocks.h"

namespace inferno {
namespace {

std::vector<float> RandomVector(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The byte offsets of a block's f16 fields (scales, offsets, mins).
std::vector<size_t> HalfFields(DType dtype) {
  switch (dtype) {
    case DType::kQ4_1:
      return {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)};
    case DType::kQ5_0:
      return {offsetof(BlockQ5_0, d)};
    case DType::kQ5_1:
      return {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)};
    case DType::kIQ4_NL:
      return {offsetof(BlockIQ4_NL, d)};
    case DType::kQ2_K:
      return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case DType::kQ3_K:
      return {offsetof(BlockQ3_K, d)};
    case DType::kQ4_K:
      return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case DType::kQ5_K:
      return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    case DType::kQ6_K:
      return {offsetof(BlockQ6_K, d)};
    case DType::kIQ4_XS:
      return {offsetof(BlockIQ4_XS, d)};
    default:
      ADD_FAILURE() << "no random blocks for " << DTypeName(dtype);
      return {};
  }
}

// rows x cols of `dtype` as random blocks: random bytes, then every f16
// field a random value in +-[0.001, 0.01) (a finite scale of either sign).
std::vector<std::byte> RandomBlocks(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  const int64_t bytes = DTypeBytes(dtype, rows * cols).value();
  std::mt19937 rng(seed);
  std::vector<std::byte> w(bytes);
  for (std::byte& b : w) b = static_cast<std::byte>(rng() & 0xff);
  std::uniform_real_distribution<float> magnitude(0.001f, 0.01f);
  const int64_t block_bytes = DTypeBlockBytes(dtype);
  for (int64_t at = 0; at < bytes; at += block_bytes) {
    for (size_t field : HalfFields(dtype)) {
      const uint16_t h = FloatToHalf(rng() % 2 == 0 ? magnitude(rng) : -magnitude(rng));
      std::memcpy(w.data() + at + field, &h, sizeof h);
    }
  }
  return w;
}

std::vector<uint32_t> Bits(std::span<const float> values) {
  std::vector<uint32_t> bits(values.size());
  std::memcpy(bits.data(), values.data(), values.size() * sizeof(float));
  return bits;
}

class QuantRows : public testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  // Several blocks per row (4 super-blocks; 12 blocks of 32).
  int64_t Cols() const { return DTypeBlockElements(dtype()) == kSuperBlockElements ? 1024 : 384; }
};

TEST_P(QuantRows, CloseToTheProductOfTheDequantizedWeights) {
  const int64_t n = 3, rows = 37, cols = Cols();
  const std::vector<float> x = RandomVector(n * cols, 11);
  const std::vector<std::byte> w = RandomBlocks(dtype(), rows, cols, 12);
  std::vector<float> widened(rows * cols);
  ConvertToF32(dtype(), w.data(), widened);
  const WeightMatrix matrix[] = {{dtype(), w.data(), rows}};
  ThreadPool pool(2);
  std::vector<float> out(n * rows);
  MatMul(out, x, matrix, n, rows, cols, pool);
  // x is quantized to 8 bits (|x| <= 1, so the rounding error of an element
  // is at most 1/254): |error| <= sum |w| / 254, plus f32 rounding.
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      double expected = 0, bound = 1e-4;
      for (int64_t c = 0; c < cols; ++c) {
        expected += static_cast<double>(x[t * cols + c]) * widened[r * cols + c];
        bound += std::fabs(widened[r * cols + c]) / 254.0;
      }
      ASSERT_NEAR(out[t * rows + r], expected, bound)
          << DTypeName(dtype()) << " " << KernelInstructionSet() << " position " << t << " row " << r;
    }
  }
}

TEST_P(QuantRows, ExactOnTheCodesWhenXIsOnItsGrid) {
  // x with 127 in one element of each block and small integers elsewhere
  // quantizes exactly (scale 1): the product is then the dequantized row's
  // dot with x up to f32 rounding of the few sums, much tighter than above.
  const int64_t rows = 9, cols = Cols(), block = DTypeBlockElements(dtype());
  std::vector<float> x(cols);
  std::mt19937 rng(5);
  for (int64_t c = 0; c < cols; ++c) x[c] = c % block == 0 ? 127.0f : static_cast<float>(int(rng() % 15) - 7);
  const std::vector<std::byte> w = RandomBlocks(dtype(), rows, cols, 13);
  std::vector<float> widened(rows * cols);
  ConvertToF32(dtype(), w.data(), widened);
  const WeightMatrix matrix[] = {{dtype(), w.data(), rows}};
  ThreadPool pool(1);
  std::vector<float> out(rows);
  MatMul(out, x, matrix, 1, rows, cols, pool);
  for (int64_t r = 0; r < rows; ++r) {
    double expected = 0, magnitude = 0;
    for (int64_t c = 0; c < cols; ++c) {
      expected += static_cast<double>(x[c]) * widened[r * cols + c];
      magnitude += std::fabs(static_cast<double>(x[c]) * widened[r * cols + c]);
    }
    EXPECT_NEAR(out[r], expected, 1e-5 * magnitude + 1e-6) << DTypeName(dtype()) << " row " << r;
  }
}

TEST_P(QuantRows, BitIdenticalAcrossThreadsBatchesAndRowGroups) {
  constexpr int64_t kMaxBatch = 64;
  const int64_t rows = 23, cols = Cols();
  const std::vector<float> x = RandomVector(kMaxBatch * cols, 21);
  const std::vector<std::byte> w = RandomBlocks(dtype(), rows, cols, 22);
  const int64_t row_bytes = DTypeBytes(dtype(), cols).value();
  const WeightMatrix matrix[] = {{dtype(), w.data(), rows}};
  ThreadPool single(1), pair(2), three(3);
  std::vector<float> vector_products(kMaxBatch * rows);
  for (int64_t t = 0; t < kMaxBatch; ++t) {
    MatMul(std::span<float>(vector_products).subspan(t * rows, rows),
           std::span<const float>(x).subspan(t * cols, cols), matrix, 1, rows, cols, single);
  }
  const std::vector<uint32_t> expected = Bits(vector_products);
  for (int64_t n = 1; n <= kMaxBatch; ++n) {
    const int64_t first = kMaxBatch - n;
    std::vector<float> out(n * rows);
    MatMul(out, std::span<const float>(x).subspan(first * cols, n * cols), matrix, n, rows, cols,
           n % 3 == 0   ? three
           : n % 2 == 0 ? pair
                        : single);
    const std::vector<uint32_t> got = Bits(out);
    ASSERT_TRUE(std::equal(got.begin(), got.end(), expected.begin() + first * rows))
        << DTypeName(dtype()) << " " << KernelInstructionSet() << ": batch of " << n;
  }
  // One row alone (not in a tile of several): the same bits.
  for (int64_t r : {0, 5, 22}) {
    const WeightMatrix one[] = {{dtype(), w.data() + r * row_bytes, 1}};
    float out;
    MatMul({&out, 1}, std::span<const float>(x).first(cols), one, 1, 1, cols, single);
    EXPECT_EQ(Bits({&out, 1})[0], expected[r]) << "row " << r;
  }
}

TEST(QuantRows, MixedTypesInOneProductEqualEachAlone) {
  // q, k, v of Q4_K, Q6_K and Q5_0 read in one product (as a Q4_K_M file's
  // attention does), each the same as its own product.
  const int64_t cols = 512, rows = 8;
  const std::vector<float> x = RandomVector(2 * cols, 31);
  const DType dtypes[] = {DType::kQ4_K, DType::kQ6_K, DType::kQ5_0};
  std::vector<std::vector<std::byte>> stored;
  std::vector<WeightMatrix> matrices;
  for (DType dtype : dtypes) stored.push_back(RandomBlocks(dtype, rows, cols, 40 + stored.size()));
  for (size_t i = 0; i < std::size(dtypes); ++i) matrices.push_back({dtypes[i], stored[i].data(), rows});
  ThreadPool pool(2);
  std::vector<float> together(2 * 3 * rows);
  MatMul(together, x, matrices, 2, 3 * rows, cols, pool);
  for (size_t i = 0; i < std::size(dtypes); ++i) {
    std::vector<float> alone(2 * rows);
    MatMul(alone, x, std::span<const WeightMatrix>(&matrices[i], 1), 2, rows, cols, pool);
    for (int64_t t = 0; t < 2; ++t) {
      for (int64_t r = 0; r < rows; ++r) {
        EXPECT_EQ(together[t * 3 * rows + i * rows + r], alone[t * rows + r]) << DTypeName(dtypes[i]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryType, QuantRows,
                         testing::Values(DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL,
                                         DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K,
                                         DType::kIQ4_XS),
                         [](const testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

}  // namespace
}  // namespace inferno
