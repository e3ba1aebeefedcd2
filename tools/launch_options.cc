#include "tools/launch_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace inferno {
namespace {

using ParseResult = Expected<LaunchOptions, std::string>;

// Appending (not "'" + ...) avoids GCC 12's false -Wrestrict at -O3.
std::string Quoted(std::string_view value) { return std::string("'").append(value).append("'"); }

Expected<long, std::string> ParseInteger(std::string_view flag, const std::string& value, long min,
                                         long max) {
  errno = 0;
  char* end = nullptr;
  const long parsed = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || parsed < min || parsed > max) {
    return MakeUnexpected(std::string(flag) + ": expected an integer in [" + std::to_string(min) +
                          ", " + std::to_string(max) + "], got " + Quoted(value));
  }
  return parsed;
}

// Seconds as a decimal (e.g. "0.5"); zero only if `allow_zero`.
Expected<std::chrono::milliseconds, std::string> ParseSeconds(std::string_view flag,
                                                              const std::string& value,
                                                              bool allow_zero) {
  errno = 0;
  char* end = nullptr;
  const double seconds = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno != 0 || !std::isfinite(seconds) || seconds < 0 ||
      (seconds == 0 && !allow_zero) || seconds > 1e7) {
    return MakeUnexpected(std::string(flag) + ": expected a " +
                          (allow_zero ? "non-negative" : "positive") + " number of seconds, got " +
                          Quoted(value));
  }
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

}  // namespace

const char* LaunchUsage() {
  return "usage: launch -n RANKS [--tag-output] [--timeout SECONDS] [--grace SECONDS] [--secure]\n"
         "              [--nnodes N --node-rank R --master-addr ADDR --master-port PORT]\n"
         "              [--] PROGRAM [ARGS...]\n"
         "Starts RANKS copies of PROGRAM with RANK, WORLD_SIZE, LOCAL_RANK,\n"
         "LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set. When a rank fails, the\n"
         "others get SIGTERM, then SIGKILL after --grace seconds (default 5), and\n"
         "launch exits with the failed rank's status (128+signal if it was killed).\n"
         "  -n RANKS           ranks on this node (required)\n"
         "  --tag-output       prefix each output line with \"[rank] \"\n"
         "  --timeout SECONDS  stop the job after this long and exit 124\n"
         "  --grace SECONDS    time between SIGTERM and SIGKILL (default 5)\n"
         "  --secure           encrypt the job's traffic and admit only its ranks: they\n"
         "                     get INFERNO_JOB_SECRET (launch's own if set, which every\n"
         "                     node of a multi-node job needs; else a fresh one)\n"
         "  --nnodes N         nodes in the job (default 1)\n"
         "  --node-rank R      this node's index; it runs ranks R*RANKS .. R*RANKS+RANKS-1\n"
         "  --master-addr ADDR host of rank 0 (default 127.0.0.1)\n"
         "  --master-port PORT rendezvous port (default: a free port; required if N > 1)\n";
}

Expected<LaunchOptions, std::string> ParseLaunchOptions(int argc, const char* const* argv) {
  LaunchOptions options;
  bool have_ranks = false;
  bool have_master_port = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-') break;  // the program starts here
    // Accept both "--flag value" and "--flag=value".
    std::string value;
    bool has_inline_value = false;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline_value = true;
    }
    if (arg == "--help" || arg == "-h") {
      options.show_help = true;
      return options;
    }
    if (arg == "--tag-output" || arg == "--secure") {
      if (has_inline_value) return MakeUnexpected(arg + " takes no value, got " + Quoted(value));
      (arg == "--secure" ? options.secure : options.tag_output) = true;
      continue;
    }
    const bool takes_value = arg == "-n" || arg == "--nproc-per-node" || arg == "--timeout" ||
                             arg == "--grace" || arg == "--nnodes" || arg == "--node-rank" ||
                             arg == "--master-addr" || arg == "--master-port";
    if (!takes_value) return MakeUnexpected("unknown flag " + Quoted(arg) + " (see launch --help)");
    if (!has_inline_value) {
      if (i + 1 >= argc) return MakeUnexpected(arg + ": missing value");
      value = argv[++i];
    }
    if (arg == "-n" || arg == "--nproc-per-node") {
      auto n = ParseInteger(arg, value, 1, 4096);
      if (!n) return MakeUnexpected(n.error());
      options.ranks_per_node = static_cast<int>(*n);
      have_ranks = true;
    } else if (arg == "--nnodes") {
      auto n = ParseInteger(arg, value, 1, 65536);
      if (!n) return MakeUnexpected(n.error());
      options.nnodes = static_cast<int>(*n);
    } else if (arg == "--node-rank") {
      auto n = ParseInteger(arg, value, 0, 65535);
      if (!n) return MakeUnexpected(n.error());
      options.node_rank = static_cast<int>(*n);
    } else if (arg == "--master-port") {
      auto n = ParseInteger(arg, value, 1, 65535);
      if (!n) return MakeUnexpected(n.error());
      options.master_port = static_cast<int>(*n);
      have_master_port = true;
    } else if (arg == "--master-addr") {
      if (value.empty()) return MakeUnexpected(std::string("--master-addr: empty address"));
      options.master_addr = value;
    } else if (arg == "--timeout") {
      auto t = ParseSeconds(arg, value, /*allow_zero=*/false);
      if (!t) return MakeUnexpected(t.error());
      options.timeout = *t;
    } else {  // --grace
      auto t = ParseSeconds(arg, value, /*allow_zero=*/true);
      if (!t) return MakeUnexpected(t.error());
      options.grace = *t;
    }
  }
  for (; i < argc; ++i) options.command.emplace_back(argv[i]);

  if (!have_ranks) return MakeUnexpected(std::string("-n: missing; say how many ranks to start"));
  if (options.command.empty()) return MakeUnexpected(std::string("no program given after the flags"));
  if (options.node_rank >= options.nnodes) {
    return MakeUnexpected("--node-rank: " + std::to_string(options.node_rank) +
                          " is not below --nnodes " + std::to_string(options.nnodes));
  }
  if (options.nnodes > 1 && !have_master_port) {
    return MakeUnexpected("--master-port: required when --nnodes is " +
                          std::to_string(options.nnodes) + " (every node must agree on it)");
  }
  return options;
}

}  // namespace inferno
