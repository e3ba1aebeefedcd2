// CurveKeys: the CURVE key pair of a secured job, derived from its JobSecret
// (see distributed/job_secret.h and curve_auth.h, which uses it on sockets).
// Kept apart from curve_auth.h so tools can print a job's public key without
// including ZeroMQ.
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <cstdint>
#include <string>

#include "distributed/job_secret.h"

namespace inferno {

// How many bytes longer a message is on the wire once CURVE encrypts it (a
// MESSAGE command: its name, a nonce, the authenticator and a flags byte; 33
// in libzmq 4.3, rounded up). ZMQ_MAXMSGSIZE limits the wire size, so a
// secured socket's limit must be this much above the largest plaintext.
inline constexpr int64_t kCurveMessageOverhead = 64;

// The job's CURVE key pair, in ZeroMQ's Z85 text form (40 characters each).
struct CurveKeys {
  std::string public_key;
  std::string secret_key;
};

// The key pair every rank of the job holding `secret` uses.
CurveKeys DeriveCurveKeys(const JobSecret& secret);

}  // namespace inferno
