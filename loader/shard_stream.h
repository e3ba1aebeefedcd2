// The byte stream of one rank's shard: the safetensors file (see
// safetensors_format.h, manifest.h) holding exactly the rank's tensors or
// tensor-parallel slices, in the source's dtype, produced from a memory-mapped
// checkpoint in bounded chunks, which the sharding job writes to a file.
//
// Thread-safety: StreamRankShard only reads the checkpoint; concurrent calls
// are safe with distinct sinks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/error.h"
#include "loader/mapped_checkpoint.h"
#include "loader/shard_plan.h"
#include "loader/tensor_info.h"

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

// The tensors of `shard`'s file, in order: each slice's name, the source
// dtype and SliceShape.
std::vector<TensorInfo> ShardTensorInfos(const Checkpoint& checkpoint, const RankShard& shard);

// The size of rank `rank`'s shard file.
uint64_t RankShardBytes(const Checkpoint& checkpoint, const ShardPlan& plan, int rank);

// Appends rank `rank`'s shard file — header (with ShardMetadata), then each
// slice's bytes — to `sink` and flushes it. Releases each source tensor's
// pages once copied. Precondition: every tensor of the plan is in the
// checkpoint.
Status StreamRankShard(const MappedCheckpoint& checkpoint, const ShardPlan& plan, int rank,
                       ChunkedSink& sink);

}  // namespace inferno
