#include "distributed/reduce.h"

#include <algorithm>
#include <cstring>

#include <glog/logging.h>

namespace inferno {
namespace {

template <typename Combine>
void ReduceLoop(float* __restrict dst, const std::byte* __restrict src, size_t n, Combine combine) {
  for (size_t i = 0; i < n; ++i) {
    float value;
    std::memcpy(&value, src + i * sizeof(float), sizeof(float));
    dst[i] = combine(dst[i], value);
  }
}

}  // namespace

void ReduceInto(std::span<float> dst, std::span<const std::byte> src, ReduceKind op) {
  CHECK_EQ(src.size(), dst.size() * sizeof(float));
  float* out = dst.data();
  const std::byte* in = src.data();
  const size_t n = dst.size();
  switch (op) {
    case ReduceKind::kSum:
    case ReduceKind::kMean:
      ReduceLoop(out, in, n, [](float a, float b) { return a + b; });
      return;
    case ReduceKind::kProd:
      ReduceLoop(out, in, n, [](float a, float b) { return a * b; });
      return;
    case ReduceKind::kMin:
      ReduceLoop(out, in, n, [](float a, float b) { return std::min(a, b); });
      return;
    case ReduceKind::kMax:
      ReduceLoop(out, in, n, [](float a, float b) { return std::max(a, b); });
      return;
  }
}

void DivideBy(std::span<float> data, float divisor) {
  for (float& value : data) value /= divisor;
}

}  // namespace inferno
