#include "distributed/zmq/curve_keys.h"

#include <glog/logging.h>
#include <zmq.h>

namespace inferno {
namespace {

// Z85 text of 32 bytes is 40 characters (plus the terminating NUL).
constexpr size_t kZ85KeyChars = 40;

}  // namespace

CurveKeys DeriveCurveKeys(const JobSecret& secret) {
  char secret_text[kZ85KeyChars + 1] = {};
  char public_text[kZ85KeyChars + 1] = {};
  CHECK(zmq_z85_encode(secret_text, secret.bytes.data(), secret.bytes.size()) != nullptr);
  CHECK_EQ(zmq_curve_public(public_text, secret_text), 0)
      << "libzmq was built without CURVE: " << zmq_strerror(zmq_errno());
  return CurveKeys{public_text, secret_text};
}

}  // namespace inferno
