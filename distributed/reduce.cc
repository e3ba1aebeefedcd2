#include "distributed/reduce.h"

#include <algorithm>
#include <cstring>

#include <glog/logging.h>

namespace inferno {
namespace {

template <typename T, typename Combine>
void ReduceLoop(T* __restrict dst, const std::byte* __restrict src, size_t n, Combine combine) {
  for (size_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, src + i * sizeof(T), sizeof(T));
    dst[i] = combine(dst[i], value);
  }
}

// int32 sums and products in uint32, where overflow wraps (defined) instead
// of being undefined.
int32_t WrappingAdd(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
int32_t WrappingMultiply(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}

template <typename T, typename Add, typename Multiply>
void Reduce(std::span<T> dst, std::span<const std::byte> src, ReduceKind op, Add add, Multiply multiply) {
  CHECK_EQ(src.size(), dst.size() * sizeof(T));
  T* out = dst.data();
  const std::byte* in = src.data();
  const size_t n = dst.size();
  switch (op) {
    case ReduceKind::kSum:
    case ReduceKind::kMean:
      ReduceLoop(out, in, n, add);
      return;
    case ReduceKind::kProd:
      ReduceLoop(out, in, n, multiply);
      return;
    case ReduceKind::kMin:
      ReduceLoop(out, in, n, [](T a, T b) { return std::min(a, b); });
      return;
    case ReduceKind::kMax:
      ReduceLoop(out, in, n, [](T a, T b) { return std::max(a, b); });
      return;
  }
}

}  // namespace

void ReduceInto(std::span<float> dst, std::span<const std::byte> src, ReduceKind op) {
  Reduce(
      dst, src, op, [](float a, float b) { return a + b; }, [](float a, float b) { return a * b; });
}

void ReduceInto(std::span<int32_t> dst, std::span<const std::byte> src, ReduceKind op) {
  Reduce(dst, src, op, WrappingAdd, WrappingMultiply);
}

void DivideBy(std::span<float> data, float divisor) {
  for (float& value : data) value /= divisor;
}

void DivideBy(std::span<int32_t> data, int32_t divisor) {
  for (int32_t& value : data) value /= divisor;
}

}  // namespace inferno
