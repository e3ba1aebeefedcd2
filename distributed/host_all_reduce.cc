#include "distributed/host_all_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace inferno {

Result<HostAllReduce> HostAllReduce::Make(ProcessGroup group, const std::string& host_key) {
  const uint64_t own = std::hash<std::string>()(host_key);
  std::vector<std::byte> keys(sizeof own * static_cast<size_t>(group.world_size()));
  if (Status gathered = group.all_gather(std::as_bytes(std::span(&own, 1)), keys); !gathered) {
    return gathered.error().Prefixed("all_gather of the host keys: ");
  }
  // Hosts in the order of their first rank; each host's ranks in group order.
  std::vector<uint64_t> host_of_rank(static_cast<size_t>(group.world_size()));
  std::memcpy(host_of_rank.data(), keys.data(), keys.size());
  std::vector<uint64_t> hosts;
  std::vector<std::vector<int>> members;
  for (int rank = 0; rank < group.world_size(); ++rank) {
    size_t host = 0;
    while (host < hosts.size() && hosts[host] != host_of_rank[rank]) ++host;
    if (host == hosts.size()) {
      hosts.push_back(host_of_rank[rank]);
      members.emplace_back();
    }
    members[host].push_back(rank);
  }
  HostAllReduce made(group, static_cast<int>(hosts.size()));
  bool shared_host = false;
  for (const std::vector<int>& ranks : members) shared_host = shared_host || ranks.size() > 1;
  if (hosts.size() < 2 || !shared_host) return made;
  // Split is a collective of the whole group: every rank makes every group
  // and keeps its own.
  std::vector<int> leaders;
  for (const std::vector<int>& ranks : members) {
    leaders.push_back(ranks.front());
    Result<ProcessGroup> split = group.Split(ranks);
    if (std::find(ranks.begin(), ranks.end(), group.rank()) == ranks.end()) continue;
    if (!split)
      return split.error().Prefixed("making the host group of rank " + std::to_string(ranks.front()) + ": ");
    made.host_.emplace(std::move(*split));
  }
  Result<ProcessGroup> split = group.Split(leaders);
  if (std::find(leaders.begin(), leaders.end(), group.rank()) != leaders.end()) {
    if (!split) return split.error().Prefixed("making the group of the hosts' first ranks: ");
    made.leaders_.emplace(std::move(*split));
  }
  return made;
}

Status HostAllReduce::Sum(std::span<float> data, const CrossHostSum& across) {
  // Across hosts: `across`, or the f32 all_reduce.
  auto sum_across = [&](ProcessGroup& hosts) {
    return across ? across(hosts, data) : hosts.all_reduce(data, ReduceKind::kSum);
  };
  if (hosts_ == 1) return group_.all_reduce(data, ReduceKind::kSum);
  if (!two_levels()) return sum_across(group_);
  const bool several = host_->world_size() > 1;
  if (several) {
    if (Status summed = host_->all_reduce(data, ReduceKind::kSum); !summed) {
      return summed.error().Prefixed("the host's all_reduce: ");
    }
  }
  if (leaders_) {
    if (Status summed = sum_across(*leaders_); !summed) return summed.error().Prefixed("the hosts' sum: ");
  }
  if (several) {
    if (Status sent = host_->broadcast(0, data); !sent)
      return sent.error().Prefixed("the host's broadcast: ");
  }
  return {};
}

}  // namespace inferno
