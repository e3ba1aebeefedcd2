#include "runtime/prefix_cache_index.h"

#include <algorithm>

#include <glog/logging.h>

namespace inferno {
namespace {

// FNV-1a over the parent's hash and the block's ids, little-endian bytes.
uint64_t ChainHash(uint64_t parent, std::span<const int32_t> ids) {
  uint64_t hash = 14695981039346656037ull;
  const auto mix = [&hash](uint64_t word, int bytes) {
    for (int i = 0; i < bytes; ++i) {
      hash ^= (word >> (8 * i)) & 0xff;
      hash *= 1099511628211ull;
    }
  };
  mix(parent, 8);
  for (int32_t id : ids) mix(static_cast<uint32_t>(id), 4);
  return hash;
}

}  // namespace

PrefixCacheIndex::PrefixCacheIndex(int64_t capacity_blocks, int64_t block_bytes)
    : block_bytes_(block_bytes), blocks_(static_cast<size_t>(capacity_blocks)) {
  CHECK_GE(capacity_blocks, 0);
  CHECK_LE(capacity_blocks, INT32_MAX);
  for (int64_t id = capacity_blocks - 1; id >= 0; --id) free_.push_back(static_cast<int32_t>(id));
  stats_.capacity_blocks = capacity_blocks;
  stats_.capacity_bytes = capacity_blocks * block_bytes;
}

int32_t PrefixCacheIndex::Find(uint64_t hash, int32_t parent, std::span<const int32_t> ids) const {
  const auto [begin, end] = by_hash_.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    const Block& block = blocks_[static_cast<size_t>(it->second)];
    if (block.parent == parent && std::equal(ids.begin(), ids.end(), block.ids.begin(), block.ids.end())) {
      return it->second;
    }
  }
  return -1;
}

void PrefixCacheIndex::Unlist(int32_t id) {
  evictable_.erase({blocks_[static_cast<size_t>(id)].last_used, id});
}

void PrefixCacheIndex::Relist(int32_t id) {
  const Block& block = blocks_[static_cast<size_t>(id)];
  if (block.ready && block.references == 0 && block.children == 0) evictable_.insert({block.last_used, id});
}

int32_t PrefixCacheIndex::Allocate() {
  if (free_.empty()) {
    if (evictable_.empty()) return -1;
    Remove(evictable_.begin()->second);
    ++stats_.evictions;
  }
  const int32_t id = free_.back();
  free_.pop_back();
  ++stats_.blocks_in_use;
  stats_.bytes_in_use = stats_.blocks_in_use * block_bytes_;
  return id;
}

void PrefixCacheIndex::Remove(int32_t id) {
  Unlist(id);
  Block& block = blocks_[static_cast<size_t>(id)];
  const auto [begin, end] = by_hash_.equal_range(block.hash);
  for (auto it = begin; it != end; ++it) {
    if (it->second == id) {
      by_hash_.erase(it);
      break;
    }
  }
  if (block.parent >= 0) {
    Unlist(block.parent);
    --blocks_[static_cast<size_t>(block.parent)].children;
    Relist(block.parent);
  }
  block = Block{};
  free_.push_back(id);
  --stats_.blocks_in_use;
  stats_.bytes_in_use = stats_.blocks_in_use * block_bytes_;
}

PrefixPlan PrefixCacheIndex::Admit(int64_t sequence, std::span<const int32_t> prompt) {
  PrefixPlan plan;
  if (blocks_.empty() || prompt.empty()) return plan;
  CHECK(!holdings_.contains(sequence)) << "sequence " << sequence << " admitted twice";
  ++stats_.lookups;
  const size_t whole = prompt.size() / kPrefixBlockPositions;
  // The prompt's last position always runs.
  const size_t most_restored = (prompt.size() - 1) / kPrefixBlockPositions;
  Holding& holding = holdings_[sequence];
  uint64_t hash = 0;
  int32_t parent = -1;
  size_t i = 0;
  for (; i < whole; ++i) {
    const std::span<const int32_t> ids = prompt.subspan(i * kPrefixBlockPositions, kPrefixBlockPositions);
    const uint64_t key = ChainHash(hash, ids);
    const int32_t id = Find(key, parent, ids);
    if (id < 0) break;
    Block& block = blocks_[static_cast<size_t>(id)];
    // Being filled by another sequence, or the block of the last position:
    // what follows is not this sequence's to fill either.
    if (!block.ready || i >= most_restored) {
      i = whole;
      break;
    }
    Unlist(id);
    ++block.references;
    block.last_used = ++clock_;
    plan.restore.push_back(id);
    holding.restored.push_back(id);
    hash = key;
    parent = id;
  }
  for (; i < whole; ++i) {
    const int32_t id = Allocate();
    if (id < 0) break;
    const std::span<const int32_t> ids = prompt.subspan(i * kPrefixBlockPositions, kPrefixBlockPositions);
    Block& block = blocks_[static_cast<size_t>(id)];
    block.hash = ChainHash(hash, ids);
    block.parent = parent;
    block.ids.assign(ids.begin(), ids.end());
    block.references = 1;
    block.last_used = ++clock_;
    by_hash_.emplace(block.hash, id);
    if (parent >= 0) {
      Unlist(parent);
      ++blocks_[static_cast<size_t>(parent)].children;
    }
    plan.save.push_back(id);
    holding.filling.push_back(id);
    hash = block.hash;
    parent = id;
  }
  if (!plan.restore.empty()) {
    ++stats_.hits;
    stats_.hit_positions += plan.first_position();
  }
  if (plan.empty()) holdings_.erase(sequence);
  return plan;
}

void PrefixCacheIndex::Prefilled(int64_t sequence) { Release(sequence, true); }

void PrefixCacheIndex::Ended(int64_t sequence) { Release(sequence, false); }

void PrefixCacheIndex::Release(int64_t sequence, bool prefilled) {
  const auto found = holdings_.find(sequence);
  if (found == holdings_.end()) return;
  const Holding holding = std::move(found->second);
  holdings_.erase(found);
  for (int32_t id : holding.restored) {
    --blocks_[static_cast<size_t>(id)].references;
    Relist(id);
  }
  if (prefilled) {
    for (int32_t id : holding.filling) {
      Block& block = blocks_[static_cast<size_t>(id)];
      block.ready = true;
      block.references = 0;
      block.last_used = ++clock_;
      Relist(id);
    }
    return;
  }
  // Children first: each pending block's only child is the next one.
  for (auto it = holding.filling.rbegin(); it != holding.filling.rend(); ++it) Remove(*it);
}

}  // namespace inferno
