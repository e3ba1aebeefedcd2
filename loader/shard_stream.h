// The byte stream of one rank's shard: the safetensors file (see
// safetensors_format.h, manifest.h) holding exactly the rank's tensors or
// tensor-parallel slices, in the source's dtype or converted (ShardDType), produced from a memory-mapped
// checkpoint in bounded chunks, which the sharding job writes to a file.
//
// Thread-safety: StreamRankShard only reads the checkpoint; concurrent calls
// are safe with distinct sinks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "base/error.h"
#include "loader/mapped_checkpoint.h"
#include "loader/shard_plan.h"
#include "tensor/tensor_info.h"

namespace inferno {

// Groups appended byte ranges into chunks handed to `emit`: short ranges are
// gathered in a buffer of `buffer_bytes`; ranges at least that long pass
// through without a copy, cut into pieces of at most `max_chunk_bytes`.
class ChunkedSink {
 public:
  using Emit = std::function<Status(std::span<const std::byte>)>;

  // Precondition: 0 < buffer_bytes <= max_chunk_bytes.
  ChunkedSink(size_t buffer_bytes, size_t max_chunk_bytes, Emit emit);

  Status Append(std::span<const std::byte> bytes);
  // Emits what is buffered.
  Status Flush();

 private:
  size_t buffer_bytes_;
  size_t max_chunk_bytes_;
  Emit emit_;
  std::vector<std::byte> buffer_;
};

// The type `slice` of tensor `source` is stored in within a shard:
// `convert` (shard --dtype) for a matrix (2-D tensor), the source's type
// otherwise (norms and biases are not converted, nor a matrix whose rows are
// not whole 32-element blocks of a block type `convert`, such as
// stories260K's 172-wide down_proj rows) — except that a column
// slice that cuts a 32-element block of a Q8_0/Q4_0 row (a tensor-parallel
// slice of o_proj or down_proj whose heads are not whole blocks) is stored
// as F32: the values of the whole row quantized, then cut.
DType ShardDType(const TensorInfo& source, const TensorSlice& slice, std::optional<DType> convert);

// The tensors of `shard`'s file, in order: each slice's name, ShardDType and
// SliceShape.
std::vector<TensorInfo> ShardTensorInfos(const Checkpoint& checkpoint, const RankShard& shard,
                                         std::optional<DType> convert);

// The size of rank `rank`'s shard file.
uint64_t RankShardBytes(const Checkpoint& checkpoint, const ShardPlan& plan, int rank,
                        std::optional<DType> convert);

// Appends rank `rank`'s shard file — header (with ShardMetadata), then each
// slice's bytes — to `sink` and flushes it. Slices stored in their source's
// type are copied unchanged; others are converted row by row (ConvertFromF32:
// f16/bf16 rounded to nearest even, Q8_0/Q4_0 quantized as ggml's reference
// quantizers do), so memory stays bounded. Releases each source tensor's
// pages once copied. Fails naming the tensor when a value cannot be
// converted (a NaN or infinity into a block type). Precondition: every
// tensor of the plan is in the checkpoint.
Status StreamRankShard(const MappedCheckpoint& checkpoint, const ShardPlan& plan, int rank,
                       std::optional<DType> convert, ChunkedSink& sink);

}  // namespace inferno
