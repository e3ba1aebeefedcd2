// launch: starts the ranks of a job on this node and supervises them.
// See LaunchUsage() in tools/launch_options.cc, or run `launch --help`.
#include <cstdio>

#include "tools/launch_options.h"
#include "tools/launcher.h"

int main(int argc, char** argv) {
  auto options = inferno::ParseLaunchOptions(argc, argv);
  if (!options) {
    std::fprintf(stderr, "launch: %s\n", options.error().c_str());
    return 2;
  }
  if (options->show_help) {
    std::fputs(inferno::LaunchUsage(), stdout);
    return 0;
  }
  auto status = inferno::RunRanks(*options);
  if (!status) {
    std::fprintf(stderr, "launch: %s\n", status.error().c_str());
    return 1;
  }
  return *status;
}
