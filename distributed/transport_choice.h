// TransportChoice: what carries a job's data between two ranks, as chosen by
// INFERNO_TRANSPORT or `launch --transport` (auto, zmq, shm or tcp) and applied
// at the rendezvous (distributed/rendezvous.h).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>

#include "base/error.h"

namespace inferno {

// The environment variable that carries the choice to every rank.
inline constexpr char kTransportVariable[] = "INFERNO_TRANSPORT";

enum class TransportChoice {
  // Shared memory between ranks with the same HostIdentity (boot, host name,
  // network, IPC and pid namespaces: truly one machine) that both offer it,
  // ZeroMQ over ipc:// between the others within one IPC domain, and between
  // the rest the direct TCP data path when the job has a secret (ZeroMQ
  // over tcp:// without one).
  kAuto,
  // ZeroMQ (data and control) between every pair.
  kZmq,
  // Shared memory between every pair: every rank must be on this host.
  kShm,
  // The direct TCP data path (distributed/tcp) between every pair, control
  // over ZeroMQ on tcp://, even between ranks of one host (for tests and
  // measurements of a path between hosts on one machine); also without a
  // job secret (its keys then travel in clear, docs/network.md).
  kTcp,
};

// "auto", "zmq", "shm", "tcp".
const char* TransportChoiceName(TransportChoice choice);

// Parses TransportChoiceName's form. Errors: InvalidArgument naming `what`
// (e.g. "INFERNO_TRANSPORT") and quoting `text`.
Result<TransportChoice> ParseTransportChoice(const std::string& what, const std::string& text);

}  // namespace inferno
