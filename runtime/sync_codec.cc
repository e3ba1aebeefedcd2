#include "runtime/sync_codec.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <glog/logging.h>

#include "tensor/float16.h"
#include "tensor/quant_blocks.h"

namespace inferno {

const char* SyncDTypeName(SyncDType dtype) {
  switch (dtype) {
    case SyncDType::kF32:
      return "f32";
    case SyncDType::kBF16:
      return "bf16";
    case SyncDType::kQ8_0:
      return "q8_0";
  }
  return "?";
}

Result<SyncDType> ParseSyncDType(const std::string& name) {
  for (SyncDType dtype : {SyncDType::kF32, SyncDType::kBF16, SyncDType::kQ8_0}) {
    if (name == SyncDTypeName(dtype)) return dtype;
  }
  return Error::InvalidArgument("--sync-dtype: '" + name + "' is not f32, bf16 or q8_0");
}

namespace {

int64_t Blocks(int64_t elements) { return (elements + kQuantBlockElements - 1) / kQuantBlockElements; }

}  // namespace

size_t SyncBytes(SyncDType dtype, int64_t elements) {
  switch (dtype) {
    case SyncDType::kF32:
      return static_cast<size_t>(elements) * sizeof(float);
    case SyncDType::kBF16:
      return static_cast<size_t>(elements) * sizeof(uint16_t);
    case SyncDType::kQ8_0:
      return static_cast<size_t>(Blocks(elements)) * sizeof(BlockQ8_0);
  }
  return 0;
}

void EncodeSync(SyncDType dtype, std::span<const float> data, std::span<std::byte> out) {
  const int64_t n = static_cast<int64_t>(data.size());
  CHECK_EQ(out.size(), SyncBytes(dtype, n));
  switch (dtype) {
    case SyncDType::kF32:
      std::memcpy(out.data(), data.data(), out.size());
      return;
    case SyncDType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t b = FloatToBFloat16(data[i]);
        std::memcpy(out.data() + i * sizeof b, &b, sizeof b);
      }
      return;
    case SyncDType::kQ8_0: {
      const int64_t whole = n / kQuantBlockElements;
      for (int64_t b = 0; b < Blocks(n); ++b) {
        BlockQ8_0 block;
        if (b < whole) {
          QuantizeRowQ8_0(data.subspan(b * kQuantBlockElements, kQuantBlockElements), std::span(&block, 1));
        } else {
          std::array<float, kQuantBlockElements> tail{};
          std::copy(data.begin() + b * kQuantBlockElements, data.end(), tail.begin());
          QuantizeRowQ8_0(tail, std::span(&block, 1));
        }
        std::memcpy(out.data() + b * sizeof block, &block, sizeof block);
      }
      return;
    }
  }
}

void AddDecodedSync(SyncDType dtype, std::span<const std::byte> bytes, std::span<float> sum) {
  const int64_t n = static_cast<int64_t>(sum.size());
  CHECK_EQ(bytes.size(), SyncBytes(dtype, n));
  switch (dtype) {
    case SyncDType::kF32:
      for (int64_t i = 0; i < n; ++i) {
        float value;
        std::memcpy(&value, bytes.data() + i * sizeof value, sizeof value);
        sum[i] += value;
      }
      return;
    case SyncDType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t b;
        std::memcpy(&b, bytes.data() + i * sizeof b, sizeof b);
        sum[i] += BFloat16ToFloat(b);
      }
      return;
    case SyncDType::kQ8_0: {
      std::array<float, kQuantBlockElements> values;
      for (int64_t b = 0; b < Blocks(n); ++b) {
        BlockQ8_0 block;
        std::memcpy(&block, bytes.data() + b * sizeof block, sizeof block);
        DequantizeRowQ8_0(std::span(&block, 1), values);
        const int64_t count = std::min<int64_t>(kQuantBlockElements, n - b * kQuantBlockElements);
        for (int64_t j = 0; j < count; ++j) sum[b * kQuantBlockElements + j] += values[j];
      }
      return;
    }
  }
}

}  // namespace inferno
