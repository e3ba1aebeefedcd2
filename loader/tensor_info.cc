#include "loader/tensor_info.h"

#include <bit>
#include <cstring>

#include <glog/logging.h>

namespace inferno {
namespace {

// IEEE 754 binary16 -> binary32, exact for every input (subnormals, inf, NaN).
float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // Subnormal: normalize the mantissa.
    int32_t e = 127 - 15 + 1;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

}  // namespace

int64_t TensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

std::optional<DType> ParseDType(std::string_view name) {
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    if (DTypeName(d) == name) return d;
  }
  return std::nullopt;
}

void ConvertToF32(DType dtype, const std::byte* src, std::span<float> out) {
  static_assert(std::endian::native == std::endian::little, "checkpoints are little-endian");
  switch (dtype) {
    case DType::kF32:
      std::memcpy(out.data(), src, out.size_bytes());
      return;
    case DType::kF16:
      for (size_t i = 0; i < out.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = HalfToFloat(h);
      }
      return;
    case DType::kBF16:
      for (size_t i = 0; i < out.size(); ++i) {
        uint16_t b;
        std::memcpy(&b, src + 2 * i, 2);
        out[i] = std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
      }
      return;
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace inferno
