// TransportChoice: what carries a job's data between two ranks, as chosen by
// INFERNO_TRANSPORT or `launch --transport` (auto, zmq or shm) and applied
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
  // ZeroMQ over ipc:// between other ranks of one IPC domain, and the direct
  // TCP data path (distributed/tcp) between ranks on different hosts.
  kAuto,
  // ZeroMQ (data and control) between every pair.
  kZmq,
  // Shared memory between every pair: every rank must be on this host.
  kShm,
  // TCP between every pair, even ranks on one host, which then talk as ranks
  // on different hosts do (for tests and measurements of the multi-host path
  // on one machine): data over the direct TCP data path (distributed/tcp),
  // control over ZeroMQ on tcp://.
  kTcp,
};

// "auto", "zmq", "shm", "tcp".
const char* TransportChoiceName(TransportChoice choice);

// Parses TransportChoiceName's form. Errors: InvalidArgument naming `what`
// (e.g. "INFERNO_TRANSPORT") and quoting `text`.
Result<TransportChoice> ParseTransportChoice(const std::string& what, const std::string& text);

}  // namespace inferno
