// PrefixPlan: what the leader's prefix cache (prefix_cache_index.h) decides
// for one admitted sequence, and what every rank of the pipeline carries out
// on its own KV blocks (kv_block_store.h): the prompt's first whole blocks
// come from the cache, the next whole blocks go into it once run.
//
// A block is kPrefixBlockPositions consecutive positions of a sequence,
// block i holding positions [i * B, (i + 1) * B). Block ids name storage in
// [0, the cache's capacity) and are the same on every rank.
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <vector>

namespace inferno {

// Positions per block: small enough that a chat turn re-runs few positions
// past its last whole block (at most B - 1), large enough that a block's
// copy is one long memcpy per layer and the index stays small (vLLM's
// default is 16 too).
inline constexpr int64_t kPrefixBlockPositions = 16;

struct PrefixPlan {
  // Blocks 0 .. restore.size() - 1 of the prompt: copied from these ids
  // into the slot before the prompt's positions from restore.size() * B on
  // are run.
  std::vector<int32_t> restore;
  // The blocks that follow, restore.size() .. + save.size() - 1: stored
  // into these ids once the slot has run their positions.
  std::vector<int32_t> save;

  bool empty() const { return restore.empty() && save.empty(); }
  // The first position the slot runs.
  int64_t first_position() const { return static_cast<int64_t>(restore.size()) * kPrefixBlockPositions; }

  bool operator==(const PrefixPlan&) const = default;
};

}  // namespace inferno
