// SyncCodec: the type in which a tensor-parallel all-reduce's vectors cross
// between ranks (--sync-dtype), and their encoding. f32 sends the floats as
// they are; bf16 rounds each to bfloat16 (2 bytes, ~3 significant digits);
// q8_0 cuts the vector into ggml's Q8_0 blocks of 32 (34 bytes each: an f16
// scale and 32 int8; tensor/quant_blocks.h), the last block padded with
// zeros, as distributed-llama's Q80 sync does. The sum itself is always in
// f32 (tensor_parallel_group.h).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/error.h"

namespace inferno {

enum class SyncDType { kF32, kBF16, kQ8_0 };

// The --sync-dtype flag's help, the same in every tool that takes it.
inline constexpr const char* kSyncDTypeFlagHelp =
    "the type in which tensor-parallel sums cross between ranks, summed in f32: f32 (the default), bf16 "
    "or q8_0 (blocks of 32 int8 with an f16 scale); not with --tp 1";

// "f32", "bf16" or "q8_0".
const char* SyncDTypeName(SyncDType dtype);

// The type named `name` (SyncDTypeName's names). Errors: any other name,
// naming the --sync-dtype flag.
Result<SyncDType> ParseSyncDType(const std::string& name);

// The bytes EncodeSync writes for `elements` floats.
size_t SyncBytes(SyncDType dtype, int64_t elements);

// out (SyncBytes(dtype, data.size())) = `data` in `dtype`.
void EncodeSync(SyncDType dtype, std::span<const float> data, std::span<std::byte> out);

// sum (n) += the n floats EncodeSync wrote into `bytes` (SyncBytes(dtype, n)).
void AddDecodedSync(SyncDType dtype, std::span<const std::byte> bytes, std::span<float> sum);

}  // namespace inferno
