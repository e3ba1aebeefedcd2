// launch: starts the ranks of a job on this node and supervises them.
// See LaunchCommandSpec() in launch/launch_options.cc, or run `launch --help`.
#include <cstdio>

#include "launch/launch_options.h"
#include "launch/launcher.h"

int main(int argc, char** argv) {
  const inferno::CommandLine flags =
      inferno::ParseCommandLineOrExit(argc, argv, inferno::LaunchCommandSpec());
  auto options = inferno::ParseLaunchOptions(flags);
  if (!options) {
    std::fprintf(stderr, "launch: %s\n", options.error().message.c_str());
    return 2;
  }
  auto status = inferno::RunRanks(*options);
  if (!status) {
    std::fprintf(stderr, "launch: %s\n", status.error().ToString().c_str());
    return 1;
  }
  return *status;
}
