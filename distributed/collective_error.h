// CollectiveError: why a ProcessGroup or Transport call failed, as a value.
//
// Every fallible call in //distributed returns Result<T> (or Status), never
// throws and never aborts because a peer misbehaved. The message names what a
// user needs to act on: the op, the peer, the tag and the sequence number.
//
// Thread-safety: a plain value type.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "distributed/expected.h"

namespace inferno {

enum class ErrorKind {
  kLengthMismatch,      // buffer lengths differ across ranks
  kUnknownRank,         // a rank outside [0, world_size)
  kInvalidTag,          // a user tag in the reserved range
  kInvalidArgument,     // any other bad argument from the caller
  kTimeout,             // a wait passed its deadline
  kPeerLost,            // a peer stopped answering heartbeats or disconnected
  kCollectiveMismatch,  // ranks called different collectives, or out of order
  kTransport,           // the transport failed (socket error, bind failure)
  kClosed,              // the transport was closed
};

// Short name of the kind, e.g. "Timeout".
const char* ErrorKindName(ErrorKind kind);

struct CollectiveError {
  ErrorKind kind = ErrorKind::kTransport;
  // One line, naming op, peer, tag and sequence number where they apply.
  std::string message;

  // "<KindName>: <message>".
  std::string ToString() const;

  static CollectiveError LengthMismatch(const std::string& where, int64_t expected, int64_t got);
  static CollectiveError UnknownRank(const std::string& where, int rank, int world_size);
  static CollectiveError InvalidTag(const std::string& where, uint32_t tag);
  static CollectiveError InvalidArgument(const std::string& message);
  static CollectiveError Timeout(const std::string& op, int peer, std::chrono::milliseconds waited);
  static CollectiveError PeerLost(const std::string& where, int peer);
  static CollectiveError CollectiveMismatch(const std::string& here, const std::string& peer_sent);
  static CollectiveError Transport(const std::string& reason);
  static CollectiveError Closed(const std::string& where);
};

template <typename T>
using Result = Expected<T, CollectiveError>;
using Status = Expected<void, CollectiveError>;

}  // namespace inferno
