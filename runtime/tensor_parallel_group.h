// TensorParallelGroup: the ProcessGroup of one pipeline stage's ranks, in
// tensor-parallel index order (its rank t is the stage's tp_index t; see
// loader/shard_plan.h), sharing the job's transport. It is the AllReduce
// (engine/all_reduce.h) of the stage's TransformerStage, and the group over
// which the generator's ranks of a stage agree (tensor_parallel_agreement.h).
// Its sums run through HostAllReduce (distributed/host_all_reduce.h): among
// the ranks of one host in f32 (shared memory under --transport auto), in
// two levels when the stage's ranks sit on several hosts, several on one;
// only the sums that cross between hosts do so in the group's SyncDType
// (sync_codec.h). In f32 that is the all_reduce; in bf16 or q8_0 each host
// encodes its sum, the encodings are all-gathered among one rank per host,
// and each of those ranks decodes and adds them in f32 in host order (so
// every rank holds the same bits). With every rank on one host nothing is
// encoded: compression would only cost there.
//
// Thread-safety: like ProcessGroup, driven by one thread at a time (the
// rank's generator thread).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
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
  explicit TensorParallelGroup(HostAllReduce sum, SyncDType sync = SyncDType::kF32)
      : sum_(std::move(sum)), sync_(sync) {}

  ProcessGroup& group() { return sum_.group(); }

  int rank() const override { return sum_.group().rank(); }
  // The sum over the group, crossing between hosts in sync_dtype().
  Status Sum(std::span<float> data) override;

  SyncDType sync_dtype() const { return sync_; }

 private:
  // The CrossHostSum of bf16 / q8_0: `data` encoded, all-gathered over
  // `hosts`, decoded and added in order.
  Status SumEncoded(ProcessGroup& hosts, std::span<float> data);

  HostAllReduce sum_;
  SyncDType sync_;
  std::vector<std::byte> encoded_;   // bf16 / q8_0: this host's sum
  std::vector<std::byte> gathered_;  // bf16 / q8_0: every host's, in order
};

// This rank's tensor-parallel group: the ranks of its stage, in
// tensor-parallel index order, its sums crossing between hosts (by
// `host_key`, HostIdentity() but in tests) in `sync`; none when plan.tp is
// 1. A collective of `group`: every rank calls it. Precondition:
// group.world_size() == plan.world_size(). Errors: --sync-dtype other than
// f32 without tensor parallelism; the split's, naming the stage.
Result<std::optional<TensorParallelGroup>> MakeTensorParallelGroup(
    ProcessGroup& group, const ShardPlan& plan, SyncDType sync = SyncDType::kF32,
    const std::string& host_key = HostIdentity());

}  // namespace inferno
