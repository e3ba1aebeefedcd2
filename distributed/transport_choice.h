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
  // ZeroMQ between the others.
  kAuto,
  // ZeroMQ between every pair.
  kZmq,
  // Shared memory between every pair: every rank must be on this host.
  kShm,
  // ZeroMQ over tcp:// between every pair, even ranks on one host, which
  // then talk as ranks on different hosts do (for tests and measurements of
  // the multi-host path on one machine).
  kTcp,
};

// "auto", "zmq", "shm", "tcp".
const char* TransportChoiceName(TransportChoice choice);

// Parses TransportChoiceName's form. Errors: InvalidArgument naming `what`
// (e.g. "INFERNO_TRANSPORT") and quoting `text`.
Result<TransportChoice> ParseTransportChoice(const std::string& what, const std::string& text);

}  // namespace inferno
