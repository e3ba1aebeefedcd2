#include "runtime/kv_block_store.h"

#include <string>

#include <glog/logging.h>

#include "runtime/prefix_plan.h"

namespace inferno {

int64_t JobBytesPerBlock(const ModelConfig& config) {
  return kPrefixBlockPositions * 2 * config.num_hidden_layers * config.num_key_value_heads *
         config.head_dim() * static_cast<int64_t>(sizeof(float));
}

int64_t PrefixCacheBlocks(const ModelConfig& config, int64_t budget_bytes) {
  return budget_bytes / JobBytesPerBlock(config);
}

Status KvBlockStore::CheckSupports(const TransformerStage& stage) {
  if (stage.SmallestWindow() < kPrefixBlockPositions) {
    return Error::InvalidArgument("--cache-mib: the prefix cache needs sliding windows of at least " +
                                  std::to_string(kPrefixBlockPositions) +
                                  " positions, and this model's are " +
                                  std::to_string(stage.SmallestWindow()) + "; pass --cache-mib 0");
  }
  return {};
}

KvBlockStore::KvBlockStore(TransformerStage& stage, int64_t capacity_blocks)
    : stage_(stage),
      floats_per_block_(kPrefixBlockPositions * stage.KvFloatsPerPosition()),
      blocks_(static_cast<size_t>(capacity_blocks)) {
  CHECK_GE(capacity_blocks, 1);
  CHECK(CheckSupports(stage).ok());
}

Status KvBlockStore::CheckId(int32_t block, const char* op) const {
  if (block < 0 || block >= capacity()) {
    return Error::Corruption(std::string(op) + " of prefix block " + std::to_string(block) +
                             ", not among the " + std::to_string(capacity()) + " of the cache");
  }
  return {};
}

Status KvBlockStore::Save(int32_t block, int slot, int64_t first_pos) {
  if (Status valid = CheckId(block, "save"); !valid) return valid;
  std::vector<float>& stored = blocks_[static_cast<size_t>(block)];
  stored.resize(static_cast<size_t>(floats_per_block_));
  stage_.CopyKvOut(slot, first_pos, kPrefixBlockPositions, stored);
  return {};
}

Status KvBlockStore::Restore(int32_t block, int slot, int64_t first_pos) {
  if (Status valid = CheckId(block, "restore"); !valid) return valid;
  const std::vector<float>& stored = blocks_[static_cast<size_t>(block)];
  if (stored.empty()) {
    return Error::Corruption("restore of prefix block " + std::to_string(block) + ", which holds nothing");
  }
  stage_.CopyKvIn(slot, first_pos, stored);
  return {};
}

}  // namespace inferno
