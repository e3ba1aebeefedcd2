// KvBlockStore: one rank's share of the prefix cache's KV blocks
// (prefix_plan.h) — the keys and values of kPrefixBlockPositions positions
// in each of its stage's layers (under tensor parallelism, its KV heads) —
// and the copies between blocks and a slot's KV cache. The leader's
// PrefixCacheIndex decides which block ids hold what; every rank stores and
// restores exactly the ids its decisions name, in the order its messages
// arrive, so all ranks' blocks hold the same prefixes.
//
// Blocks are copied, not referenced in place: the stage's attention reads
// one contiguous cache per slot and layer (engine/transformer.h), so a hit
// costs one copy of the cached positions into the slot (a memcpy per layer
// and block, far below the prefill it replaces: a block's keys and values
// are 2 × 16 × kv_dim floats per layer, where running those positions is a
// pass over every weight) and a filled block one copy out. Paged attention
// would avoid both copies and the second copy of a shared prefix in every
// slot using it, at the price of a block table in the attention kernel;
// at this cache's sizes the copies are not what a turn waits for.
//
// Memory: a block's storage is allocated when it is first filled and
// reused after, so a rank holds at most capacity × bytes_per_block().
//
// Thread-safety: not thread-safe; the rank's generator thread owns it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "engine/transformer.h"
#include "model/model_config.h"

namespace inferno {

// The bytes one block takes summed over a job's ranks: every layer's keys
// and values of kPrefixBlockPositions positions, f32.
int64_t JobBytesPerBlock(const ModelConfig& config);

// The blocks a budget of `budget_bytes` (the whole job's) holds; 0 = off.
int64_t PrefixCacheBlocks(const ModelConfig& config, int64_t budget_bytes);

class KvBlockStore {
 public:
  // Fails (InvalidArgument, naming --cache-mib) when a sliding layer of the
  // stage attends to fewer positions than a block: its cache may have
  // dropped a block's first positions before the block is stored.
  static Status CheckSupports(const TransformerStage& stage);

  // `stage` (must outlive this and pass CheckSupports) holds the slots;
  // `capacity_blocks` >= 1, the same on every rank.
  KvBlockStore(TransformerStage& stage, int64_t capacity_blocks);

  int64_t capacity() const { return static_cast<int64_t>(blocks_.size()); }
  // This rank's bytes of one block.
  int64_t bytes_per_block() const { return floats_per_block_ * static_cast<int64_t>(sizeof(float)); }

  // Stores positions [first_pos, first_pos + kPrefixBlockPositions) of
  // `slot` (which it has run; see TransformerStage::CopyKvOut) in block
  // `block`. Corruption when `block` is not in [0, capacity).
  Status Save(int32_t block, int slot, int64_t first_pos);
  // Copies block `block` into positions [first_pos, first_pos +
  // kPrefixBlockPositions) of `slot`. Corruption when `block` is not in [0,
  // capacity) or was never stored.
  Status Restore(int32_t block, int slot, int64_t first_pos);

 private:
  Status CheckId(int32_t block, const char* op) const;

  TransformerStage& stage_;
  const int64_t floats_per_block_;
  std::vector<std::vector<float>> blocks_;  // (capacity, floats_per_block_ once stored)
};

}  // namespace inferno
