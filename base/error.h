// Error: why an operation failed, as a value — the one error type of the whole
// tree, in the spirit of leveldb's Status and absl's status codes.
//
// An error is a kind, which survives package boundaries (a caller of the
// generator tells a lost peer from a corrupt checkpoint without parsing
// text), and one line of text naming what a user needs to act on: the flag,
// the file and byte offset, the tensor, the rank, the peer, the op and its
// sequence number. Fallible calls return Result<T> or Status and never throw
// across an API; CHECK is for programmer errors only.
//
//   Result<ModelConfig> config = ParseConfig(path);
//   if (!config) return config.error().Prefixed("--model: ");
//   if (error.kind == ErrorKind::kPeerLost) ...
//
// Thread-safety: a plain value type.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/expected.h"

namespace inferno {

enum class ErrorKind {
  kInvalidArgument,     // a bad flag, option or argument from the caller
  kNotFound,            // a file, tensor or key that does not exist
  kCorruption,          // bytes that do not decode: a malformed file, frame or message
  kUnimplemented,       // a valid input this program does not support
  kIo,                  // the operating system refused (open, write, mmap, mkdir)
  kLengthMismatch,      // buffer lengths differ across ranks
  kUnknownRank,         // a rank outside [0, world_size)
  kInvalidTag,          // a user tag in the reserved range
  kTimeout,             // a wait passed its deadline
  kPeerLost,            // a peer stopped answering, disconnected or aborted
  kCollectiveMismatch,  // ranks called different collectives, or out of order
  kTransport,           // the transport failed (socket error, bind failure)
  kClosed,              // the transport was closed
};

// Short name of the kind, e.g. "Timeout".
const char* ErrorKindName(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kInvalidArgument;
  // One line, no newline.
  std::string message;

  // "<KindName>: <message>".
  std::string ToString() const;

  // The same kind, with `prefix` put in front of the message
  // (e.g. Prefixed("--model: ")): context added on the way up.
  Error Prefixed(std::string_view prefix) const;

  static Error InvalidArgument(std::string message);
  static Error NotFound(std::string message);
  static Error Corruption(std::string message);
  static Error Unimplemented(std::string message);
  static Error Io(std::string message);
  static Error LengthMismatch(const std::string& where, int64_t expected, int64_t got);
  static Error UnknownRank(const std::string& where, int rank, int world_size);
  static Error InvalidTag(const std::string& where, uint32_t tag);
  static Error Timeout(const std::string& op, int peer, std::chrono::milliseconds waited);
  static Error PeerLost(const std::string& where, int peer);
  static Error CollectiveMismatch(const std::string& here, const std::string& peer_sent);
  static Error Transport(std::string reason);
  static Error Closed(const std::string& where);
};

// `text` (a name or value read from a file) as it may appear in a message:
// control characters (NUL, newline, ...) shown as '?', so that the message
// stays on one line, and cut after `limit` bytes with "...".
std::string PrintableInMessage(std::string_view text, size_t limit = 120);

template <typename T>
using Result = Expected<T, Error>;
using Status = Expected<void, Error>;

}  // namespace inferno
