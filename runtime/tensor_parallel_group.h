// TensorParallelGroup: the ProcessGroup of one pipeline stage's ranks, in
// tensor-parallel index order (its rank t is the stage's tp_index t; see
// loader/shard_plan.h), sharing the job's transport. It is the AllReduce
// (engine/all_reduce.h) of the stage's TransformerStage, and the group over
// which the generator's ranks of a stage agree (tensor_parallel_agreement.h).
// Its sums cross between ranks in the group's SyncDType (sync_codec.h): in
// f32 as ProcessGroup::all_reduce, in two levels when the stage's ranks sit
// on several hosts, several on one (distributed/host_all_reduce.h); in bf16
// or q8_0 each rank encodes its vector, the encodings are all-gathered, and
// every rank decodes and adds them in f32 in tensor-parallel order (so every
// rank holds the same bits). The type applies to every transport the group
// uses, shared memory within a host included.
//
// Thread-safety: like ProcessGroup, driven by one thread at a time (the
// rank's generator thread).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "base/error.h"
#include "distributed/host_all_reduce.h"
#include "distributed/process_group.h"
#include "engine/all_reduce.h"
#include "loader/shard_plan.h"
#include "runtime/sync_codec.h"

namespace inferno {

class TensorParallelGroup final : public AllReduce {
 public:
  // `host_sum` (may be empty): the f32 sums run through it.
  explicit TensorParallelGroup(ProcessGroup group, SyncDType sync = SyncDType::kF32,
                               std::optional<HostAllReduce> host_sum = std::nullopt)
      : group_(std::move(group)), sync_(sync), host_sum_(std::move(host_sum)) {}

  ProcessGroup& group() { return group_; }

  int rank() const override { return group_.rank(); }
  // The sum over the group, its vectors crossing in sync_dtype().
  Status Sum(std::span<float> data) override;

  SyncDType sync_dtype() const { return sync_; }

 private:
  ProcessGroup group_;
  SyncDType sync_;
  std::optional<HostAllReduce> host_sum_;
  std::vector<std::byte> encoded_;   // bf16 / q8_0: this rank's vector
  std::vector<std::byte> gathered_;  // bf16 / q8_0: every rank's, in order
};

// This rank's tensor-parallel group: the ranks of its stage, in
// tensor-parallel index order, its sums crossing in `sync`, in two levels
// when its ranks' hosts (HostKey) call for it; none when plan.tp is 1. A
// collective of
// `group`: every rank calls it. Precondition: group.world_size() ==
// plan.world_size(). Errors: the split's, naming the stage.
Result<std::optional<TensorParallelGroup>> MakeTensorParallelGroup(ProcessGroup& group, const ShardPlan& plan,
                                                                   SyncDType sync = SyncDType::kF32);

}  // namespace inferno
