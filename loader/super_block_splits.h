// Whether a plan's tensor-parallel column splits keep the super-blocks of
// 256 (Q2_K ... Q6_K, IQ4_XS) whole. A rank holds the columns of o_proj and
// down_proj that its heads and hidden units read; a K-quant row cannot be
// cut inside a super-block (its scales cover all 256 columns), and converting
// such a slice to f32, as a cut Q8_0/Q4_0 block is, would hold 7x the bytes.
//
// Thread-safety: a pure function.
#pragma once

#include <vector>

#include "base/error.h"
#include "loader/shard_plan.h"
#include "tensor/tensor_info.h"

namespace inferno {

// InvalidArgument naming the first tensor of a super-block type in
// `tensors` whose column slice, on some rank of `plan`, does not start and
// end on a multiple of 256 columns, with the --tp and the block count, e.g.
// "--tp 4 cuts the super-blocks of 'blk.0.ffn_down.weight' (Q4_K, 22 blocks
// of 256 columns): tensor-parallel rank 0 would hold columns [0, 1408)".
Status CheckSuperBlocksStayWhole(const ShardPlan& plan, const std::vector<TensorInfo>& tensors);

}  // namespace inferno
