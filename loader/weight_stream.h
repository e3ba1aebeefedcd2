// Leader-only weight loading: only rank 0 can read the checkpoint (hosts
// without a shared filesystem); it streams every other rank that rank's shard
// over the ProcessGroup in bounded chunks.
//
// What travels to rank r is exactly rank r's shard file (shard_stream.h): the
// receiver checks it like a file it read — a valid safetensors header whose
// metadata names rank r and the group's world — so every rank ends with a
// Checkpoint equal, bit for bit, to OpenRankShard's over shards of the same
// plan: config() is the whole model's, tensors() are the rank's slices under
// their Hugging Face names. The leader holds at most one chunk plus one source
// tensor's pages at a time; each receiver holds its own weights.
//
// Wire protocol, on tag kWeightStreamTag from rank 0 to rank r: one message
// of 8 bytes (the shard's size, uint64 little-endian), then the shard's bytes
// in order, in messages of at most chunk_bytes.
//
// Thread-safety: like the ProcessGroup calls it makes; run one stream per
// group at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "distributed/process_group.h"
#include "loader/checkpoint.h"
#include "loader/load_error.h"
#include "loader/mapped_checkpoint.h"
#include "loader/shard_plan.h"

namespace inferno {

// A user tag (below kTagReservedBase) reserved for weight streaming.
inline constexpr uint32_t kWeightStreamTag = 0x57474854u;  // "WGHT"
inline constexpr size_t kDefaultWeightChunkBytes = 4 << 20;

// On rank 0 of `group`: sends ranks 1..world-1 their shards of `checkpoint`
// under `plan` (in rank order, chunks of at most `chunk_bytes`) and returns
// rank 0's own shard, held in memory. Fails if the plan's world differs from
// the group's, or naming the rank and the collective error if a send fails.
LoadResult<std::unique_ptr<Checkpoint>> ServeShards(ProcessGroup& group, const MappedCheckpoint& checkpoint,
                                                    const ShardPlan& plan,
                                                    size_t chunk_bytes = kDefaultWeightChunkBytes);

// On rank r > 0 of `group`: receives this rank's shard from rank 0. Fails
// naming rank 0 and the collective error (e.g. a timeout), on a stream longer
// than announced, and on a shard made for another rank or world.
LoadResult<std::unique_ptr<Checkpoint>> ReceiveShard(ProcessGroup& group);

}  // namespace inferno
