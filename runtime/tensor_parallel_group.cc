#include "runtime/tensor_parallel_group.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <glog/logging.h>

namespace inferno {

Status TensorParallelGroup::Sum(std::span<float> data) {
  if (sync_ == SyncDType::kF32) return sum_.Sum(data);
  return sum_.Sum(
      data, [this](ProcessGroup& hosts, std::span<float> host_sum) { return SumEncoded(hosts, host_sum); });
}

Status TensorParallelGroup::SumEncoded(ProcessGroup& hosts, std::span<float> data) {
  const size_t bytes = SyncBytes(sync_, static_cast<int64_t>(data.size()));
  encoded_.resize(bytes);
  gathered_.resize(bytes * static_cast<size_t>(hosts.world_size()));
  EncodeSync(sync_, data, encoded_);
  if (Status gathered = hosts.all_gather(std::span<const std::byte>(encoded_), gathered_); !gathered) {
    return gathered.error().Prefixed(std::string("all_gather of the ") + SyncDTypeName(sync_) + " sums: ");
  }
  std::fill(data.begin(), data.end(), 0.0f);
  for (size_t offset = 0; offset < gathered_.size(); offset += bytes) {
    AddDecodedSync(sync_, std::span<const std::byte>(gathered_).subspan(offset, bytes), data);
  }
  return {};
}

Result<std::optional<TensorParallelGroup>> MakeTensorParallelGroup(ProcessGroup& group, const ShardPlan& plan,
                                                                   SyncDType sync,
                                                                   const std::string& host_key) {
  CHECK_EQ(group.world_size(), plan.world_size());
  if (plan.tp == 1) {
    if (sync != SyncDType::kF32) {
      return Error::InvalidArgument(std::string("--sync-dtype ") + SyncDTypeName(sync) +
                                    ": the plan has no tensor-parallel sums (--tp or --ep 1)");
    }
    return std::optional<TensorParallelGroup>();
  }
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
    Result<HostAllReduce> sum = HostAllReduce::Make(*split, host_key);
    if (!sum) return sum.error().Prefixed("the hosts of stage " + std::to_string(stage) + ": ");
    if (sum->two_levels()) {
      LOG(INFO) << "stage " << stage << ": tensor-parallel sums in two levels, within each host, then across "
                << sum->hosts() << " hosts in " << SyncDTypeName(sync);
    } else if (sum->hosts() == 1 && sync != SyncDType::kF32) {
      LOG(INFO) << "stage " << stage << ": every rank on one host: --sync-dtype " << SyncDTypeName(sync)
                << " does not apply, the sums stay f32";
    }
    own.emplace(*std::move(sum), sync);
  }
  return own;
}

}  // namespace inferno
