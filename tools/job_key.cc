// job_key: makes and inspects job secrets (see distributed/job_secret.h).
//
//   job_key            prints a fresh secret: export INFERNO_JOB_SECRET=$(job_key)
//                      on every rank started without launch, and on every
//                      node of a multi-node job
//   job_key --public   prints the CURVE public key (Z85) of $INFERNO_JOB_SECRET,
//                      which is not secret (tests give it to a stranger)
#include <cstdio>
#include <cstdlib>

#include "base/command_line.h"
#include "distributed/job_secret.h"
#include "distributed/zmq/curve_keys.h"

int main(int argc, char** argv) {
  using inferno::kJobSecretVariable;
  const inferno::CommandSpec spec{
      "job_key",
      "[--public]",
      "Prints a fresh job secret (export INFERNO_JOB_SECRET=$(job_key) on every rank started without launch\n"
      "and on every node of a multi-node job), or with --public the CURVE public key of $INFERNO_JOB_SECRET.",
      {{"public", "", "print the CURVE public key (Z85) of $INFERNO_JOB_SECRET, which is not secret"}}};
  const inferno::CommandLine flags = inferno::ParseCommandLineOrExit(argc, argv, spec);
  if (!flags.Has("public")) {
    inferno::Result<std::string> secret = inferno::NewJobSecretText();
    if (!secret) {
      std::fprintf(stderr, "job_key: %s\n", secret.error().ToString().c_str());
      return 1;
    }
    std::printf("%s\n", secret->c_str());
    return 0;
  }
  const char* text = std::getenv(kJobSecretVariable);
  if (text == nullptr) {
    std::fprintf(stderr, "job_key: --public: %s is not set\n", kJobSecretVariable);
    return 1;
  }
  inferno::Result<inferno::JobSecret> secret = inferno::ParseJobSecret(text);
  if (!secret) {
    std::fprintf(stderr, "job_key: %s\n", secret.error().ToString().c_str());
    return 1;
  }
  std::printf("%s\n", inferno::DeriveCurveKeys(*secret).public_key.c_str());
  return 0;
}
