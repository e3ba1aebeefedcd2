#include "loader/crc32c.h"

#include <array>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace inferno {
namespace {

constexpr uint32_t kReflectedPolynomial = 0x82F63B78u;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kReflectedPolynomial : 0u);
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

uint32_t UpdatePortable(uint32_t state, const std::byte* data, size_t size) {
  for (size_t i = 0; i < size; ++i)
    state = kTable[(state ^ static_cast<uint8_t>(data[i])) & 0xffu] ^ (state >> 8);
  return state;
}

#if defined(__x86_64__)
bool CpuHasSse42() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 20));
}

__attribute__((target("sse4.2"))) uint32_t UpdateSse42(uint32_t state, const std::byte* data, size_t size) {
  uint64_t crc = state;
  for (; size >= 8; data += 8, size -= 8) {
    uint64_t word;
    std::memcpy(&word, data, 8);
    crc = _mm_crc32_u64(crc, word);
  }
  uint32_t crc32 = static_cast<uint32_t>(crc);
  for (; size > 0; ++data, --size) crc32 = _mm_crc32_u8(crc32, static_cast<uint8_t>(*data));
  return crc32;
}
#else
bool CpuHasSse42() { return false; }
uint32_t UpdateSse42(uint32_t state, const std::byte* data, size_t size) {
  return UpdatePortable(state, data, size);
}
#endif

}  // namespace

Crc32c::Crc32c(Backend backend) : use_sse42_(backend == Backend::kBest && CpuHasSse42()) {}

void Crc32c::Update(std::span<const std::byte> bytes) {
  state_ = use_sse42_ ? UpdateSse42(state_, bytes.data(), bytes.size())
                      : UpdatePortable(state_, bytes.data(), bytes.size());
}

std::string Crc32c::HexDigest() const {
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", value());
  return hex;
}

}  // namespace inferno
