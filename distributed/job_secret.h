// JobSecret: the 32 random bytes that the ranks of a secured job share. A job
// is secured when INFERNO_JOB_SECRET is set (`launch --secure` sets it for its
// ranks); its ZeroMQ sockets then use CURVE with a key pair derived from the
// secret (see distributed/zmq/curve_auth.h), so only processes that hold the
// secret can join the rendezvous or send a frame. The text form is 64
// hexadecimal digits. Error messages never repeat the secret.
//
// Thread-safety: plain values and free functions; safe from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"

namespace inferno {

// The environment variable that carries a job's secret to its ranks.
inline constexpr char kJobSecretVariable[] = "INFERNO_JOB_SECRET";

struct JobSecret {
  static constexpr size_t kBytes = 32;
  std::array<uint8_t, kBytes> bytes{};
};

// Parses the text form (64 hex digits, either case). Errors: InvalidArgument
// naming INFERNO_JOB_SECRET and what is wrong (its length, or the position of
// the first character that is not a hex digit).
Result<JobSecret> ParseJobSecret(std::string_view text);

// A fresh secret from /dev/urandom, in text form. Errors: Transport when
// /dev/urandom cannot be read.
Result<std::string> NewJobSecretText();

}  // namespace inferno
