// PrefixCacheIndex: the leader's index of the prefix cache — which KV blocks
// (prefix_plan.h) hold which token prefixes, who uses them, and which to
// evict. It decides; every rank's KvBlockStore (kv_block_store.h) only
// copies what the decisions name, so no rank decides on its own.
//
// A block is keyed by the hash chain of the prompt's ids up to its end
// (the hash of block i folds in block i - 1's hash and block i's ids), and
// a found key is trusted only after its ids and its parent block match too:
// a block is the same prefix only if its ids equal and its parent is the
// block matched for the positions before it, so by induction the whole
// prefix is compared, never a hash alone.
//
// Life of a block: Admit of a sequence allocates it (free ids first, then
// the least recently used evictable block) to be filled from that
// sequence's run, "pending"; Prefilled makes it "ready" — found by later
// lookups — and Ended before Prefilled drops it. A sequence holds a
// reference on every block it restores or fills until its prefill has run
// (Prefilled) or it ends. A block is evictable when it is ready, no
// sequence references it, and no block names it as parent (so only leaves
// of the prefix tree go, and a chain is never cut in the middle). The
// capacity in blocks is fixed (the budget over the bytes of a block), so
// the memory the blocks take is bounded by it on every rank.
//
// Thread-safety: not thread-safe; the leader's generator thread owns it.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/prefix_plan.h"

namespace inferno {

// What /metrics shows of the cache.
struct PrefixCacheStats {
  int64_t lookups = 0;        // sequences admitted with the cache on
  int64_t hits = 0;           // of them, those that restored at least one block
  int64_t hit_positions = 0;  // positions restored instead of run, summed
  int64_t evictions = 0;      // ready blocks evicted to make room
  int64_t blocks_in_use = 0;  // blocks holding a prefix, pending or ready
  int64_t capacity_blocks = 0;
  int64_t bytes_in_use = 0;  // blocks_in_use × the job's bytes per block
  int64_t capacity_bytes = 0;

  bool operator==(const PrefixCacheStats&) const = default;
};

class PrefixCacheIndex {
 public:
  // `capacity_blocks` >= 0 (0: the cache is off, every plan is empty);
  // `block_bytes`: the bytes one block takes over the whole job, for the
  // stats.
  PrefixCacheIndex(int64_t capacity_blocks, int64_t block_bytes);

  // The plan of sequence `sequence` (not running yet) with `prompt`: the
  // longest ready prefix of whole blocks, stopping short of the prompt's
  // last position (which must run to give the first token's logits), to
  // restore; then the prompt's next whole blocks to fill, as many as free
  // or evictable blocks allow, unless the lookup stopped at a pending block
  // (another sequence is filling that prefix). References the plan's
  // blocks for `sequence`.
  PrefixPlan Admit(int64_t sequence, std::span<const int32_t> prompt);

  // The prefill of `sequence` has run on every rank: the blocks it filled
  // become ready, and its references go. Nothing when it holds none.
  void Prefilled(int64_t sequence);

  // `sequence` has ended: as Prefilled if it had been, else the blocks it
  // was to fill are dropped (freed) and its references go.
  void Ended(int64_t sequence);

  const PrefixCacheStats& stats() const { return stats_; }

 private:
  struct Block {
    uint64_t hash = 0;
    int32_t parent = -1;  // the block before it in its prefix; -1 for the first
    std::vector<int32_t> ids;
    int32_t references = 0;
    int32_t children = 0;
    bool ready = false;
    uint64_t last_used = 0;
  };
  struct Holding {
    std::vector<int32_t> restored;
    std::vector<int32_t> filling;
  };

  // The block with key `hash`, parent `parent` and these ids; -1 if none.
  int32_t Find(uint64_t hash, int32_t parent, std::span<const int32_t> ids) const;
  // A block id to fill: a free one, or the least recently used evictable
  // one evicted; -1 if none.
  int32_t Allocate();
  // Drops block `id` from the index and frees it.
  void Remove(int32_t id);
  // Keeps `evictable_` in step with block `id` around a change of its state.
  void Unlist(int32_t id);
  void Relist(int32_t id);
  void Release(int64_t sequence, bool prefilled);

  const int64_t block_bytes_;
  std::vector<Block> blocks_;  // (capacity)
  std::vector<int32_t> free_;  // ids holding nothing
  std::unordered_multimap<uint64_t, int32_t> by_hash_;
  std::set<std::pair<uint64_t, int32_t>> evictable_;  // (last_used, id)
  std::unordered_map<int64_t, Holding> holdings_;     // by sequence
  uint64_t clock_ = 0;
  PrefixCacheStats stats_;
};

}  // namespace inferno
