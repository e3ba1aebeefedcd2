// HostAllReduce: a sum over a ProcessGroup in two levels, for a group whose
// ranks sit on several hosts with several ranks on some: the ranks of each
// host sum in their host's group (in its shared segment when the transport
// connects them over shared memory), each host's first rank sums the hosts'
// sums with the other hosts' first ranks (one flow per host crosses the
// network, instead of one per rank), and broadcasts the total in its host,
// so every rank ends with the same bits. With one host, or one rank per
// host, it is the group's own all_reduce.
//
// Hosts are told apart by a key per rank (HostKey). A wrong key costs speed,
// never correctness: any split of the ranks sums to the same total.
//
// Thread-safety: like ProcessGroup; Sum is a collective of the group.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "base/error.h"
#include "distributed/process_group.h"

namespace inferno {

// This process's host: its boot id and network namespace, so that namespace
// "hosts" on one machine (tools/netns_hosts.sh) count as different hosts.
std::string HostKey();

class HostAllReduce {
 public:
  // A collective of `group`: every rank passes its `host_key`; the keys are
  // all-gathered and the host groups, and the group of each host's first
  // rank (first in group order), are split off. Errors: the collectives'.
  static Result<HostAllReduce> Make(ProcessGroup group, const std::string& host_key);

  // data = the element-wise sum of every rank's `data`, the same bits on
  // every rank. A collective of the group; errors as ProcessGroup's.
  Status Sum(std::span<float> data);

  // Whether Sum runs in two levels: several hosts, one with several ranks.
  bool two_levels() const { return host_.has_value(); }

 private:
  explicit HostAllReduce(ProcessGroup group) : group_(std::move(group)) {}

  ProcessGroup group_;
  std::optional<ProcessGroup> host_;     // two levels: this rank's host's ranks
  std::optional<ProcessGroup> leaders_;  // two levels, on each host's first rank: those ranks
};

}  // namespace inferno
