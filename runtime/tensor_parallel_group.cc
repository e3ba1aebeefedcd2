#include "runtime/tensor_parallel_group.h"

#include <string>
#include <utility>
#include <vector>

#include <glog/logging.h>

namespace inferno {

Status TensorParallelGroup::Sum(std::span<float> data) { return group_.all_reduce(data, ReduceKind::kSum); }

Result<std::optional<TensorParallelGroup>> MakeTensorParallelGroup(ProcessGroup& group,
                                                                   const ShardPlan& plan) {
  CHECK_EQ(group.world_size(), plan.world_size());
  if (plan.tp == 1) return std::optional<TensorParallelGroup>();
  const int own_stage = plan.ranks[static_cast<size_t>(group.rank())].stage;
  std::optional<TensorParallelGroup> own;
  // Split is a collective of the whole group: every rank makes every
  // stage's group, in stage order, and keeps its own.
  for (int stage = 0; stage < plan.pp; ++stage) {
    std::vector<int> members;
    for (int t = 0; t < plan.tp; ++t) members.push_back(plan.RankOf(stage, t));
    Result<ProcessGroup> split = group.Split(members);
    if (stage != own_stage) continue;
    if (!split)
      return split.error().Prefixed("making the tensor-parallel group of stage " + std::to_string(stage) +
                                    ": ");
    own.emplace(std::move(*split));
  }
  return own;
}

}  // namespace inferno
