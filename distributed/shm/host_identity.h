// HostIdentity: what two processes compare to know they can share memory —
// the same kernel boot, hostname, and network, IPC and pid namespaces. Ranks
// in different containers or network namespaces (tests/netns_link_cut_test)
// get different identities and must talk over ZeroMQ; equal identities
// mean a memfd of one can be opened through /proc by the other (segment.h).
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
