#include "tensor/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include <glog/logging.h>

#include "tensor/float16.h"
#include "tensor/k_quant_blocks.h"
#include "tensor/k_quantizer.h"
#include "tensor/quant_blocks.h"

namespace inferno {
namespace {

static_assert(std::endian::native == std::endian::little, "checkpoints are little-endian");

// Converts whole blocks of a block type through an aligned copy of the
// blocks (`src` may sit at any byte offset in a mapped file).
template <typename Block, int kElements, void (*Dequantize)(std::span<const Block>, std::span<float>)>
void DequantizeUnaligned(const std::byte* src, std::span<float> out) {
  CHECK_EQ(out.size() % kElements, 0u) << "a partial block";
  constexpr size_t kChunkBlocks = 16;
  Block chunk[kChunkBlocks];
  const size_t blocks = out.size() / kElements;
  for (size_t b = 0; b < blocks; b += kChunkBlocks) {
    const size_t n = std::min(kChunkBlocks, blocks - b);
    std::memcpy(chunk, src + b * sizeof(Block), n * sizeof(Block));
    Dequantize(std::span<const Block>(chunk, n), out.subspan(b * kElements, n * kElements));
  }
}

template <typename Block, int kElements, void (*Quantize)(std::span<const float>, std::span<Block>)>
void QuantizeUnaligned(std::span<const float> values, std::byte* dst) {
  constexpr size_t kChunkBlocks = 16;
  Block chunk[kChunkBlocks];
  const size_t blocks = values.size() / kElements;
  for (size_t b = 0; b < blocks; b += kChunkBlocks) {
    const size_t n = std::min(kChunkBlocks, blocks - b);
    Quantize(values.subspan(b * kElements, n * kElements), std::span<Block>(chunk, n));
    std::memcpy(dst + b * sizeof(Block), chunk, n * sizeof(Block));
  }
}

void HalvesToF32(const std::byte* src, std::span<float> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    out[i] = HalfToFloat(h);
  }
}

void BFloat16sToF32(const std::byte* src, std::span<float> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t b;
    std::memcpy(&b, src + 2 * i, 2);
    out[i] = BFloat16ToFloat(b);
  }
}

void F32sToF32(const std::byte* src, std::span<float> out) { std::memcpy(out.data(), src, out.size_bytes()); }

void F32sFromF32(std::span<const float> values, std::byte* dst) {
  std::memcpy(dst, values.data(), values.size_bytes());
}

template <uint16_t (*Round)(float)>
void HalvesFromF32(std::span<const float> values, std::byte* dst) {
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = Round(values[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

// What each DType is: indexed by the enum's value.
struct DTypeTraits {
  DType dtype;
  std::string_view name;
  int64_t block_elements;
  int64_t block_bytes;
  void (*to_f32)(const std::byte* src, std::span<float> out);
  void (*from_f32)(std::span<const float> values, std::byte* dst);
};

template <typename Block, int kElements, void (*Dequantize)(std::span<const Block>, std::span<float>)>
constexpr auto kBlockToF32 = DequantizeUnaligned<Block, kElements, Dequantize>;
template <typename Block, int kElements, void (*Quantize)(std::span<const float>, std::span<Block>)>
constexpr auto kBlockFromF32 = QuantizeUnaligned<Block, kElements, Quantize>;

constexpr int kBlock = kQuantBlockElements;
constexpr int kSuper = kSuperBlockElements;
constexpr DTypeTraits kTraits[] = {
    {DType::kF32, "F32", 1, 4, F32sToF32, F32sFromF32},
    {DType::kF16, "F16", 1, 2, HalvesToF32, HalvesFromF32<FloatToHalf>},
    {DType::kBF16, "BF16", 1, 2, BFloat16sToF32, HalvesFromF32<FloatToBFloat16>},
    {DType::kQ8_0, "Q8_0", kBlock, sizeof(BlockQ8_0), kBlockToF32<BlockQ8_0, kBlock, DequantizeRowQ8_0>,
     kBlockFromF32<BlockQ8_0, kBlock, QuantizeRowQ8_0>},
    {DType::kQ4_0, "Q4_0", kBlock, sizeof(BlockQ4_0), kBlockToF32<BlockQ4_0, kBlock, DequantizeRowQ4_0>,
     kBlockFromF32<BlockQ4_0, kBlock, QuantizeRowQ4_0>},
    {DType::kQ4_1, "Q4_1", kBlock, sizeof(BlockQ4_1), kBlockToF32<BlockQ4_1, kBlock, DequantizeRowQ4_1>,
     kBlockFromF32<BlockQ4_1, kBlock, QuantizeRowQ4_1>},
    {DType::kQ5_0, "Q5_0", kBlock, sizeof(BlockQ5_0), kBlockToF32<BlockQ5_0, kBlock, DequantizeRowQ5_0>,
     kBlockFromF32<BlockQ5_0, kBlock, QuantizeRowQ5_0>},
    {DType::kQ5_1, "Q5_1", kBlock, sizeof(BlockQ5_1), kBlockToF32<BlockQ5_1, kBlock, DequantizeRowQ5_1>,
     kBlockFromF32<BlockQ5_1, kBlock, QuantizeRowQ5_1>},
    {DType::kIQ4_NL, "IQ4_NL", kBlock, sizeof(BlockIQ4_NL),
     kBlockToF32<BlockIQ4_NL, kBlock, DequantizeRowIQ4_NL>,
     kBlockFromF32<BlockIQ4_NL, kBlock, QuantizeRowIQ4_NL>},
    {DType::kQ2_K, "Q2_K", kSuper, sizeof(BlockQ2_K), kBlockToF32<BlockQ2_K, kSuper, DequantizeRowQ2_K>,
     kBlockFromF32<BlockQ2_K, kSuper, QuantizeRowQ2_K>},
    {DType::kQ3_K, "Q3_K", kSuper, sizeof(BlockQ3_K), kBlockToF32<BlockQ3_K, kSuper, DequantizeRowQ3_K>,
     kBlockFromF32<BlockQ3_K, kSuper, QuantizeRowQ3_K>},
    {DType::kQ4_K, "Q4_K", kSuper, sizeof(BlockQ4_K), kBlockToF32<BlockQ4_K, kSuper, DequantizeRowQ4_K>,
     kBlockFromF32<BlockQ4_K, kSuper, QuantizeRowQ4_K>},
    {DType::kQ5_K, "Q5_K", kSuper, sizeof(BlockQ5_K), kBlockToF32<BlockQ5_K, kSuper, DequantizeRowQ5_K>,
     kBlockFromF32<BlockQ5_K, kSuper, QuantizeRowQ5_K>},
    {DType::kQ6_K, "Q6_K", kSuper, sizeof(BlockQ6_K), kBlockToF32<BlockQ6_K, kSuper, DequantizeRowQ6_K>,
     kBlockFromF32<BlockQ6_K, kSuper, QuantizeRowQ6_K>},
    {DType::kIQ4_XS, "IQ4_XS", kSuper, sizeof(BlockIQ4_XS),
     kBlockToF32<BlockIQ4_XS, kSuper, DequantizeRowIQ4_XS>,
     kBlockFromF32<BlockIQ4_XS, kSuper, QuantizeRowIQ4_XS>},
};
static_assert(std::size(kTraits) == std::size(kAllDTypes));

const DTypeTraits& Traits(DType dtype) {
  const auto index = static_cast<size_t>(dtype);
  CHECK_LT(index, std::size(kTraits)) << "unknown DType " << index;
  const DTypeTraits& traits = kTraits[index];
  CHECK(traits.dtype == dtype) << "kTraits is out of the enum's order at " << index;
  return traits;
}

}  // namespace

int64_t DTypeBlockElements(DType dtype) { return Traits(dtype).block_elements; }

int64_t DTypeBlockBytes(DType dtype) { return Traits(dtype).block_bytes; }

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

std::string_view DTypeName(DType dtype) { return Traits(dtype).name; }

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

void ConvertToF32(DType dtype, const std::byte* src, std::span<float> out) { Traits(dtype).to_f32(src, out); }

Status ConvertFromF32(DType dtype, std::span<const float> values, std::byte* dst) {
  if (Result<int64_t> bytes = DTypeBytes(dtype, static_cast<int64_t>(values.size())); !bytes)
    return bytes.error();
  const DTypeTraits& traits = Traits(dtype);
  if (traits.block_elements > 1) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (!std::isfinite(values[i])) {
        return Error::InvalidArgument("element " + std::to_string(i) + " is " + std::to_string(values[i]) +
                                      ", which " + std::string(traits.name) + " cannot represent");
      }
    }
  }
  traits.from_f32(values, dst);
  return {};
}

}  // namespace inferno
