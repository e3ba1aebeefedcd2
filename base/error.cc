#include "base/error.h"

#include <cstdio>
#include <string>
#include <utility>

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
    case ErrorKind::kInvalidArgument:
      return "InvalidArgument";
    case ErrorKind::kNotFound:
      return "NotFound";
    case ErrorKind::kCorruption:
      return "Corruption";
    case ErrorKind::kUnimplemented:
      return "Unimplemented";
    case ErrorKind::kIo:
      return "Io";
    case ErrorKind::kLengthMismatch:
      return "LengthMismatch";
    case ErrorKind::kUnknownRank:
      return "UnknownRank";
    case ErrorKind::kInvalidTag:
      return "InvalidTag";
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

std::string Error::ToString() const { return std::string(ErrorKindName(kind)) + ": " + message; }

std::string PrintableInMessage(std::string_view text, size_t limit) {
  std::string out(text.substr(0, limit));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  if (text.size() > limit) out += "...";
  return out;
}

Error Error::Prefixed(std::string_view prefix) const { return {kind, std::string(prefix) + message}; }

Error Error::InvalidArgument(std::string message) {
  return {ErrorKind::kInvalidArgument, std::move(message)};
}

Error Error::NotFound(std::string message) { return {ErrorKind::kNotFound, std::move(message)}; }

Error Error::Corruption(std::string message) { return {ErrorKind::kCorruption, std::move(message)}; }

Error Error::Unimplemented(std::string message) { return {ErrorKind::kUnimplemented, std::move(message)}; }

Error Error::Io(std::string message) { return {ErrorKind::kIo, std::move(message)}; }

Error Error::LengthMismatch(const std::string& where, int64_t expected, int64_t got) {
  return {ErrorKind::kLengthMismatch,
          where + ": length mismatch, expected " + std::to_string(expected) + ", got " + std::to_string(got)};
}

Error Error::UnknownRank(const std::string& where, int rank, int world_size) {
  return {ErrorKind::kUnknownRank,
          where + ": rank " + std::to_string(rank) + " is outside [0, " + std::to_string(world_size) + ")"};
}

Error Error::InvalidTag(const std::string& where, uint32_t tag) {
  return {ErrorKind::kInvalidTag,
          where + ": tag " + Hex(tag) + " is in the reserved range (user tags must be < 0xfff00000)"};
}

Error Error::Timeout(const std::string& op, int peer, std::chrono::milliseconds waited) {
  return {ErrorKind::kTimeout, op + ": no message from rank " + std::to_string(peer) + " after " +
                                   std::to_string(waited.count()) + " ms"};
}

Error Error::PeerLost(const std::string& where, int peer) {
  return {ErrorKind::kPeerLost, where + ": lost connection to rank " + std::to_string(peer)};
}

Error Error::CollectiveMismatch(const std::string& here, const std::string& peer_sent) {
  return {ErrorKind::kCollectiveMismatch, "this rank is in " + here + " but the peer sent " + peer_sent};
}

Error Error::Transport(std::string reason) { return {ErrorKind::kTransport, std::move(reason)}; }

Error Error::Closed(const std::string& where) {
  return {ErrorKind::kClosed, where + ": the transport is closed"};
}

}  // namespace inferno
