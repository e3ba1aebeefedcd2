// Test support: job secrets that tests can tell apart at a glance.
// Thread-safety: a pure function.
#pragma once

#include <cstdint>

#include "distributed/job_secret.h"

namespace inferno {

// A job secret whose every byte is `byte`.
inline JobSecret SecretFilledWith(uint8_t byte) {
  JobSecret secret;
  secret.bytes.fill(byte);
  return secret;
}

}  // namespace inferno
