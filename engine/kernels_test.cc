#include "engine/kernels.h"

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

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
  const std::span<const float> blocks[] = {first, second, third};
  MatMul(blocked, x, blocks, n, rows, cols, pool);
  EXPECT_EQ(blocked, whole);
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
  AttendOneHead(out, q, keys.data(), values.data(), 0, kv_dim, kv_head, head_dim, scores);
  for (int64_t i = 0; i < head_dim; ++i) EXPECT_FLOAT_EQ(out[i], values[kv_head * head_dim + i]);
  AttendOneHead(out, q, keys.data(), values.data(), 2, kv_dim, kv_head, head_dim, scores);
  for (int64_t i = 0; i < head_dim; ++i) {
    const float mean = (values[4 + i] + values[12 + i] + values[20 + i]) / 3.0f;
    EXPECT_NEAR(out[i], mean, 1e-5);
  }
}

}  // namespace
}  // namespace inferno
