#include "tensor/float16.h"

namespace inferno {

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

uint16_t FloatToHalf(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  const int32_t exponent = static_cast<int32_t>(abs >> 23) - 127 + 15;
  if (exponent >= 1) {
    // Normal half: drop 13 mantissa bits, rounding to nearest even; a carry
    // into the exponent is the correct next binade.
    const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - ((127u - 15u) << 23)) >> 13));
  }
  if (exponent < -10) return sign;  // below half the smallest subnormal: zero
  // Subnormal half: the full 24-bit significand shifted right by 14 - exponent.
  const uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
  const int shift = 14 - exponent;
  const uint32_t half_bit = 1u << (shift - 1);
  const uint32_t remainder = significand & ((half_bit << 1) - 1);
  uint32_t result = significand >> shift;
  if (remainder > half_bit || (remainder == half_bit && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

uint16_t FloatToBFloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace inferno
