// HostIdentity: which host this process is on, the one answer every part of
// the job uses — the same kernel boot, hostname, and network, IPC and pid
// namespaces. Processes with equal identities can share memory (a memfd of
// one opens through /proc in the other, shm/segment.h) and reach each
// other's ipc:// socket files (rendezvous.h); the tensor-parallel sums treat
// them as one host (host_all_reduce.h). Ranks in different containers or
// network namespaces (tools/netns_hosts.sh, tests/netns_link_cut_test) get
// different identities and talk over TCP.
//
// Thread-safety: a pure function of the running system; safe from any thread.
#pragma once

#include <string>

namespace inferno {

// "<boot id> <hostname> net:[...] ipc:[...] pid:[...]"; a part that cannot
// be read is "?" (so two processes that cannot read the same part never
// match on it by accident, the whole text carries a random suffix then).
std::string HostIdentity();

}  // namespace inferno
