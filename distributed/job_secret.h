// JobSecret: the 32 random bytes that the ranks of a job share. Every job of
// more than one rank is secured unless asked not to be (INFERNO_INSECURE=1):
// INFERNO_JOB_SECRET carries the secret (`launch` makes one for its ranks); its
// ZeroMQ sockets then use CURVE with a key pair derived from the
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

// The environment variable that names a file holding a job's secret (its
// text form, a trailing newline allowed), for launchers that start ranks
// with the user's environment but no per-job variable of ours (mpirun,
// srun): the file lives where every host sees it (a shared home), and only
// its owner may read it.
inline constexpr char kJobSecretFileVariable[] = "INFERNO_JOB_SECRET_FILE";

// Set to 1, the environment variable that asks for a job without a secret
// (`launch --insecure` sets it): its ranks admit anyone who reaches them.
// Without it, a rank of a multi-rank job refuses to start without a secret.
inline constexpr char kInsecureJobVariable[] = "INFERNO_INSECURE";

struct JobSecret {
  static constexpr size_t kBytes = 32;
  std::array<uint8_t, kBytes> bytes{};
};

// Parses the text form (64 hex digits, either case). Errors: InvalidArgument
// naming INFERNO_JOB_SECRET and what is wrong (its length, or the position of
// the first character that is not a hex digit).
Result<JobSecret> ParseJobSecret(std::string_view text);

// The secret in the file at `path` (see kJobSecretFileVariable). Errors,
// naming INFERNO_JOB_SECRET_FILE and the path but never the contents: Io when
// it cannot be opened; InvalidArgument when it is not a regular file,
// belongs to another user, may be read or written by its group or others
// (the message gives the mode and says to chmod 600 it), or does not hold
// 64 hex digits.
Result<JobSecret> ReadJobSecretFile(const std::string& path);

// A fresh secret from /dev/urandom, in text form. Errors: Transport when
// /dev/urandom cannot be read.
Result<std::string> NewJobSecretText();

}  // namespace inferno
