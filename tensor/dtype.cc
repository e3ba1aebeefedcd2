#include "tensor/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include <glog/logging.h>

#include "tensor/float16.h"
#include "tensor/quant_blocks.h"

namespace inferno {
namespace {

static_assert(std::endian::native == std::endian::little, "checkpoints are little-endian");

// Converts whole blocks of a block type through an aligned copy of the
// blocks (`src` may sit at any byte offset in a mapped file).
template <typename Block, void (*Dequantize)(std::span<const Block>, std::span<float>)>
void DequantizeUnaligned(const std::byte* src, std::span<float> out) {
  CHECK_EQ(out.size() % kQuantBlockElements, 0u) << "a partial block";
  constexpr size_t kChunkBlocks = 64;
  Block chunk[kChunkBlocks];
  const size_t blocks = out.size() / kQuantBlockElements;
  for (size_t b = 0; b < blocks; b += kChunkBlocks) {
    const size_t n = std::min(kChunkBlocks, blocks - b);
    std::memcpy(chunk, src + b * sizeof(Block), n * sizeof(Block));
    Dequantize(std::span<const Block>(chunk, n),
               out.subspan(b * kQuantBlockElements, n * kQuantBlockElements));
  }
}

template <typename Block, void (*Quantize)(std::span<const float>, std::span<Block>)>
void QuantizeUnaligned(std::span<const float> values, std::byte* dst) {
  constexpr size_t kChunkBlocks = 64;
  Block chunk[kChunkBlocks];
  const size_t blocks = values.size() / kQuantBlockElements;
  for (size_t b = 0; b < blocks; b += kChunkBlocks) {
    const size_t n = std::min(kChunkBlocks, blocks - b);
    Quantize(values.subspan(b * kQuantBlockElements, n * kQuantBlockElements), std::span<Block>(chunk, n));
    std::memcpy(dst + b * sizeof(Block), chunk, n * sizeof(Block));
  }
}

}  // namespace

int64_t DTypeBlockElements(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return 1;
    case DType::kQ8_0:
    case DType::kQ4_0:
      return kQuantBlockElements;
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

int64_t DTypeBlockBytes(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kQ8_0:
      return sizeof(BlockQ8_0);
    case DType::kQ4_0:
      return sizeof(BlockQ4_0);
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

Result<int64_t> DTypeBytes(DType dtype, int64_t elements) {
  const int64_t block = DTypeBlockElements(dtype);
  if (elements < 0 || elements % block != 0) {
    return Error::InvalidArgument(std::to_string(elements) + " elements of " + std::string(DTypeName(dtype)) +
                                  " are not a whole number of " + std::to_string(block) + "-element blocks");
  }
  int64_t bytes;
  if (__builtin_mul_overflow(elements / block, DTypeBlockBytes(dtype), &bytes)) {
    return Error::InvalidArgument(std::to_string(elements) + " elements of " + std::string(DTypeName(dtype)) +
                                  ": the byte count overflows 64 bits");
  }
  return bytes;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kQ8_0:
      return "Q8_0";
    case DType::kQ4_0:
      return "Q4_0";
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

std::optional<DType> ParseDType(std::string_view name) {
  for (DType d : kAllDTypes) {
    if (DTypeName(d) == name) return d;
  }
  return std::nullopt;
}

std::string DTypeNames() {
  std::string names;
  for (DType d : kAllDTypes) names += (names.empty() ? "" : ", ") + std::string(DTypeName(d));
  return names;
}

void ConvertToF32(DType dtype, const std::byte* src, std::span<float> out) {
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
        out[i] = BFloat16ToFloat(b);
      }
      return;
    case DType::kQ8_0:
      DequantizeUnaligned<BlockQ8_0, DequantizeRowQ8_0>(src, out);
      return;
    case DType::kQ4_0:
      DequantizeUnaligned<BlockQ4_0, DequantizeRowQ4_0>(src, out);
      return;
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

Status ConvertFromF32(DType dtype, std::span<const float> values, std::byte* dst) {
  if (Result<int64_t> bytes = DTypeBytes(dtype, static_cast<int64_t>(values.size())); !bytes)
    return bytes.error();
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, values.data(), values.size_bytes());
      return {};
    case DType::kF16:
    case DType::kBF16:
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = dtype == DType::kF16 ? FloatToHalf(values[i]) : FloatToBFloat16(values[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return {};
    case DType::kQ8_0:
    case DType::kQ4_0:
      for (size_t i = 0; i < values.size(); ++i) {
        if (!std::isfinite(values[i])) {
          return Error::InvalidArgument("element " + std::to_string(i) + " is " + std::to_string(values[i]) +
                                        ", which " + std::string(DTypeName(dtype)) + " cannot represent");
        }
      }
      if (dtype == DType::kQ8_0) {
        QuantizeUnaligned<BlockQ8_0, QuantizeRowQ8_0>(values, dst);
      } else {
        QuantizeUnaligned<BlockQ4_0, QuantizeRowQ4_0>(values, dst);
      }
      return {};
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

}  // namespace inferno
