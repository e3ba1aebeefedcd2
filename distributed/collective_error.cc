#include "distributed/collective_error.h"

#include <cstdio>
#include <string>

namespace inferno {
namespace {

std::string Hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

}  // namespace

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kLengthMismatch:
      return "LengthMismatch";
    case ErrorKind::kUnknownRank:
      return "UnknownRank";
    case ErrorKind::kInvalidTag:
      return "InvalidTag";
    case ErrorKind::kInvalidArgument:
      return "InvalidArgument";
    case ErrorKind::kTimeout:
      return "Timeout";
    case ErrorKind::kPeerLost:
      return "PeerLost";
    case ErrorKind::kCollectiveMismatch:
      return "CollectiveMismatch";
    case ErrorKind::kTransport:
      return "Transport";
    case ErrorKind::kClosed:
      return "Closed";
  }
  return "Unknown";
}

std::string CollectiveError::ToString() const {
  return std::string(ErrorKindName(kind)) + ": " + message;
}

CollectiveError CollectiveError::LengthMismatch(const std::string& where, int64_t expected,
                                                int64_t got) {
  return {ErrorKind::kLengthMismatch, where + ": length mismatch, expected " +
                                          std::to_string(expected) + ", got " +
                                          std::to_string(got)};
}

CollectiveError CollectiveError::UnknownRank(const std::string& where, int rank, int world_size) {
  return {ErrorKind::kUnknownRank, where + ": rank " + std::to_string(rank) +
                                       " is outside [0, " + std::to_string(world_size) + ")"};
}

CollectiveError CollectiveError::InvalidTag(const std::string& where, uint32_t tag) {
  return {ErrorKind::kInvalidTag, where + ": tag " + Hex(tag) +
                                      " is in the reserved range (user tags must be < 0xfff00000)"};
}

CollectiveError CollectiveError::InvalidArgument(const std::string& message) {
  return {ErrorKind::kInvalidArgument, message};
}

CollectiveError CollectiveError::Timeout(const std::string& op, int peer,
                                         std::chrono::milliseconds waited) {
  return {ErrorKind::kTimeout, op + ": no message from rank " + std::to_string(peer) + " after " +
                                   std::to_string(waited.count()) + " ms"};
}

CollectiveError CollectiveError::PeerLost(const std::string& where, int peer) {
  return {ErrorKind::kPeerLost, where + ": lost connection to rank " + std::to_string(peer)};
}

CollectiveError CollectiveError::CollectiveMismatch(const std::string& here,
                                                    const std::string& peer_sent) {
  return {ErrorKind::kCollectiveMismatch, "this rank is in " + here + " but the peer sent " +
                                              peer_sent};
}

CollectiveError CollectiveError::Transport(const std::string& reason) {
  return {ErrorKind::kTransport, reason};
}

CollectiveError CollectiveError::Closed(const std::string& where) {
  return {ErrorKind::kClosed, where + ": the transport is closed"};
}

}  // namespace inferno
