// HostAllReduce: a sum over a ProcessGroup that knows which of its ranks
// share a host, so that only the hosts' sums cross the network. By the
// hosts of the group's ranks:
// - one host: the group's all_reduce (over shared memory under --transport
//   auto); nothing crosses a network, so `across` is not used;
// - several hosts, one rank on each: `across` over the whole group;
// - several hosts, several ranks on some: two levels. The ranks of each
//   host sum in their host's group, each host's first rank adds the hosts'
//   sums with `across` among the hosts' first ranks (one flow per host
//   crosses the network, instead of one per rank), and broadcasts the total
//   in its host.
// Every rank ends with the same bits.
//
// Hosts are told apart by a key per rank (HostIdentity() unless a test says
// otherwise). A wrong key costs speed, never the sum: any split of the ranks
// sums to the same total (to rounding, when `across` rounds).
//
// Thread-safety: like ProcessGroup; Sum is a collective of the group.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>

#include "base/error.h"
#include "distributed/host_identity.h"
#include "distributed/process_group.h"

namespace inferno {

// How the hosts' sums are added across the network: a collective of `hosts`
// (one rank per host), each passing its host's sum in `data`; on return
// `data` is the total, the same bits on every rank of `hosts`. Errors: the
// collectives'.
using CrossHostSum = std::function<Status(ProcessGroup& hosts, std::span<float> data)>;

class HostAllReduce {
 public:
  // A collective of `group`: every rank passes its `host_key`; the keys are
  // all-gathered and the host groups, and the group of each host's first
  // rank (first in group order), are split off. Errors: the collectives'.
  static Result<HostAllReduce> Make(ProcessGroup group, const std::string& host_key = HostIdentity());

  // data = the element-wise sum of every rank's `data`, the same bits on
  // every rank; across hosts added by `across` (empty: the f32 all_reduce).
  // A collective of the group; errors as ProcessGroup's and `across`'s.
  Status Sum(std::span<float> data, const CrossHostSum& across = {});

  ProcessGroup& group() { return group_; }
  const ProcessGroup& group() const { return group_; }
  // How many hosts the group's ranks are on.
  int hosts() const { return hosts_; }
  // Whether Sum runs in two levels: several hosts, one with several ranks.
  bool two_levels() const { return host_.has_value(); }

 private:
  HostAllReduce(ProcessGroup group, int hosts) : group_(std::move(group)), hosts_(hosts) {}

  ProcessGroup group_;
  int hosts_;
  std::optional<ProcessGroup> host_;     // two levels: this rank's host's ranks
  std::optional<ProcessGroup> leaders_;  // two levels, on each host's first rank: those ranks
};

}  // namespace inferno
