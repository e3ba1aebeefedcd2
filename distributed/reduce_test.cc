#include "distributed/reduce.h"

#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::vector<float> Reduced(std::vector<float> dst, const std::vector<float>& src, ReduceKind op) {
  ReduceInto(dst, std::as_bytes(std::span<const float>(src)), op);
  return dst;
}

TEST(ReduceInto, AppliesEachKindElementWise) {
  const std::vector<float> a = {1, -2, 3, 8};
  const std::vector<float> b = {4, 5, -6, 0.5};
  EXPECT_EQ(Reduced(a, b, ReduceKind::kSum), (std::vector<float>{5, 3, -3, 8.5}));
  EXPECT_EQ(Reduced(a, b, ReduceKind::kMean), (std::vector<float>{5, 3, -3, 8.5}));
  EXPECT_EQ(Reduced(a, b, ReduceKind::kProd), (std::vector<float>{4, -10, -18, 4}));
  EXPECT_EQ(Reduced(a, b, ReduceKind::kMin), (std::vector<float>{1, -2, -6, 0.5}));
  EXPECT_EQ(Reduced(a, b, ReduceKind::kMax), (std::vector<float>{4, 5, 3, 8}));
}

TEST(ReduceInto, ReadsUnalignedSource) {
  const std::vector<float> values = {1.5f, 2.5f, -3.0f};
  std::vector<std::byte> shifted(1 + values.size() * sizeof(float));
  std::memcpy(shifted.data() + 1, values.data(), values.size() * sizeof(float));
  std::vector<float> dst = {1, 1, 1};
  ReduceInto(dst, std::span<const std::byte>(shifted).subspan(1), ReduceKind::kSum);
  EXPECT_EQ(dst, (std::vector<float>{2.5f, 3.5f, -2.0f}));
}

TEST(DivideBy, DividesEveryElement) {
  std::vector<float> data = {6, -3, 0};
  DivideBy(data, 3);
  EXPECT_EQ(data, (std::vector<float>{2, -1, 0}));
}

TEST(ReduceInto, AppliesEachKindToInt32AndWrapsSumsAndProducts) {
  const auto reduced = [](std::vector<int32_t> dst, const std::vector<int32_t>& src, ReduceKind op) {
    ReduceInto(dst, std::as_bytes(std::span<const int32_t>(src)), op);
    return dst;
  };
  const std::vector<int32_t> a = {1, -2, 3, INT32_MAX};
  const std::vector<int32_t> b = {4, 5, -6, 2};
  EXPECT_EQ(reduced(a, b, ReduceKind::kSum), (std::vector<int32_t>{5, 3, -3, INT32_MIN + 1}));
  EXPECT_EQ(reduced(a, b, ReduceKind::kMean), (std::vector<int32_t>{5, 3, -3, INT32_MIN + 1}));
  EXPECT_EQ(reduced(a, b, ReduceKind::kProd), (std::vector<int32_t>{4, -10, -18, -2}));
  EXPECT_EQ(reduced(a, b, ReduceKind::kMin), (std::vector<int32_t>{1, -2, -6, 2}));
  EXPECT_EQ(reduced(a, b, ReduceKind::kMax), (std::vector<int32_t>{4, 5, 3, INT32_MAX}));
}

TEST(DivideBy, RoundsInt32TowardZero) {
  std::vector<int32_t> data = {7, -7, 6};
  DivideBy(data, 2);
  EXPECT_EQ(data, (std::vector<int32_t>{3, -3, 3}));
}

}  // namespace
}  // namespace inferno
