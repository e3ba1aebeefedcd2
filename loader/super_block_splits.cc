#include "loader/super_block_splits.h"

#include <string>

#include "tensor/k_quant_blocks.h"

namespace inferno {

Status CheckSuperBlocksStayWhole(const ShardPlan& plan, const std::vector<TensorInfo>& tensors) {
  for (const TensorInfo& info : tensors) {
    if (DTypeBlockElements(info.dtype) != kSuperBlockElements || info.shape.size() != 2) continue;
    for (const RankShard& shard : plan.ranks) {
      for (const TensorSlice& slice : shard.tensors) {
        if (slice.name != info.name || slice.split_dim != 1) continue;
        if (slice.begin % kSuperBlockElements == 0 && slice.end % kSuperBlockElements == 0) continue;
        return Error::InvalidArgument(
            "--tp " + std::to_string(plan.tp) + " cuts the super-blocks of '" + info.name + "' (" +
            std::string(DTypeName(info.dtype)) + ", " + std::to_string(info.shape[1] / kSuperBlockElements) +
            (info.shape[1] == kSuperBlockElements ? " block of " : " blocks of ") +
            std::to_string(kSuperBlockElements) + " columns): tensor-parallel rank " +
            std::to_string(shard.tp_index) + " would hold columns [" + std::to_string(slice.begin) + ", " +
            std::to_string(slice.end) + "); choose a --tp that divides them into whole blocks");
      }
    }
  }
  return {};
}

}  // namespace inferno
