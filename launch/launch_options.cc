#include "launch/launch_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include <unistd.h>

#include "base/command_line.h"

namespace inferno {
namespace {

// Appending (not "'" + ...) avoids GCC 12's false -Wrestrict at -O3.
std::string Quoted(std::string_view value) { return std::string("'").append(value).append("'"); }

Result<long> ParseInteger(std::string_view flag, const std::string& value, long min, long max) {
  errno = 0;
  char* end = nullptr;
  const long parsed = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || parsed < min || parsed > max) {
    return Error::InvalidArgument(std::string(flag) + ": expected an integer in [" + std::to_string(min) +
                                  ", " + std::to_string(max) + "], got " + Quoted(value));
  }
  return parsed;
}

// Seconds as a decimal (e.g. "0.5"); zero only if `allow_zero`.
Result<std::chrono::milliseconds> ParseSeconds(std::string_view flag, const std::string& value,
                                               bool allow_zero) {
  errno = 0;
  char* end = nullptr;
  const double seconds = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno != 0 || !std::isfinite(seconds) || seconds < 0 ||
      (seconds == 0 && !allow_zero) || seconds > 1e7) {
    return Error::InvalidArgument(std::string(flag) + ": expected a " +
                                  (allow_zero ? "non-negative" : "positive") + " number of seconds, got " +
                                  Quoted(value));
  }
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

}  // namespace

const CommandSpec& LaunchCommandSpec() {
  static const CommandSpec spec{
      "launch",
      "(-n RANKS | --join ADDR:PORT) [flags] [--] PROGRAM [ARGS...]",
      "Starts RANKS copies of PROGRAM with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR\n"
      "and MASTER_PORT set. When a rank fails, the others get SIGTERM, then SIGKILL after --grace seconds,\n"
      "and launch exits with the failed rank's status (128+signal if it was killed).",
      {{"nproc-per-node", "RANKS", "ranks on this node (required)", 'n'},
       {"tag-output", "", "prefix each output line with \"[rank] \""},
       {"timeout", "SECONDS", "stop the job after this long and exit 124"},
       {"grace", "SECONDS", "time between SIGTERM and SIGKILL (default 5)"},
       {"failover", "",
        "a rank that fails (rank 0 too) does not stop the others, which carry on without it (serve "
        "--failover); the first rank to exit 0 ends the job with 0; if all fail, the last one's status"},
       {"standby", "N",
        "with --failover: start N standby ranks more on this node, which load nothing and take a lost "
        "rank's place (serve --failover; they get INFERNO_STANDBY in place of RANK)"},
       {"join", "ADDR:PORT",
        "start no ranks, only standby ranks (--standby, default 1) of a running job whose leader listens "
        "at ADDR:PORT (its MASTER_ADDR:MASTER_PORT): replacements, on any host, that take the next lost "
        "rank's place or grow a job running below its size back (serve --failover); they need the job's "
        "INFERNO_JOB_SECRET (or INFERNO_JOB_SECRET_FILE) in launch's environment"},
       {"standby-index", "I",
        "with --join: the first standby rank's index, INFERNO_STANDBY (default: launch's process id)"},
       {"insecure", "",
        "neither encrypt the job's traffic nor check who joins (by default the ranks share a secret, "
        "INFERNO_JOB_SECRET: launch's if set, else new; or launch's INFERNO_JOB_SECRET_FILE)"},
       {"transport", "T",
        "what carries the ranks' data: auto (shared memory between ranks on one host, the direct TCP "
        "data path between hosts, ZeroMQ there under --insecure), zmq (ZeroMQ between every pair), shm, "
        "or tcp (the direct TCP data path even within a host) (sets INFERNO_TRANSPORT)"},
       {"bind", "core|none",
        "core: local rank i runs on the i-th of as many equal runs of the allowed CPUs as ranks, when the "
        "ranks do not outnumber them (default, but none with --transport zmq); none: the kernel places "
        "the ranks"},
       {"nnodes", "N", "nodes in the job (default 1)"},
       {"node-rank", "R", "this node's index; it runs ranks R*RANKS .. R*RANKS+RANKS-1"},
       {"master-addr", "ADDR", "host of rank 0 (default 127.0.0.1)"},
       {"master-port", "PORT", "rendezvous port (default: a free port; required if --nnodes > 1)"}},
      /*takes_command=*/true};
  return spec;
}

Result<LaunchOptions> ParseLaunchOptions(const CommandLine& flags) {
  LaunchOptions options;
  const auto integer = [&](const char* name, const char* shown, long min, long max, int& out) -> Status {
    if (const std::optional<std::string> value = flags.Last(name)) {
      Result<long> parsed = ParseInteger(shown, *value, min, max);
      if (!parsed) return parsed.error();
      out = static_cast<int>(*parsed);
    }
    return {};
  };
  const auto seconds = [&](const char* name, bool allow_zero, std::chrono::milliseconds& out) -> Status {
    if (const std::optional<std::string> value = flags.Last(name)) {
      Result<std::chrono::milliseconds> parsed = ParseSeconds(std::string("--") + name, *value, allow_zero);
      if (!parsed) return parsed.error();
      out = *parsed;
    }
    return {};
  };
  for (Status status : {integer("nproc-per-node", "-n", 1, 4096, options.ranks_per_node),
                        integer("nnodes", "--nnodes", 1, 65536, options.nnodes),
                        integer("node-rank", "--node-rank", 0, 65535, options.node_rank),
                        integer("master-port", "--master-port", 1, 65535, options.master_port),
                        integer("standby", "--standby", 0, 4096, options.standby),
                        integer("standby-index", "--standby-index", 0, 1 << 30, options.first_standby_index),
                        seconds("timeout", false, options.timeout), seconds("grace", true, options.grace)}) {
    if (!status) return status.error();
  }
  options.tag_output = flags.Has("tag-output");
  options.insecure = flags.Has("insecure");
  options.failover = flags.Has("failover");
  if (const std::optional<std::string> transport = flags.Last("transport")) {
    Result<TransportChoice> choice = ParseTransportChoice("--transport", *transport);
    if (!choice) return choice.error();
    options.transport = *choice;
    if (*choice == TransportChoice::kZmq) options.binding = CpuBinding::kNone;
  }
  if (const std::optional<std::string> bind = flags.Last("bind")) {
    if (*bind == "core") {
      options.binding = CpuBinding::kCore;
    } else if (*bind == "none") {
      options.binding = CpuBinding::kNone;
    } else {
      return Error::InvalidArgument("--bind: expected core or none, got '" + *bind + "'");
    }
  }
  if (const std::optional<std::string> addr = flags.Last("master-addr")) {
    if (addr->empty()) return Error::InvalidArgument("--master-addr: empty address");
    options.master_addr = *addr;
  }
  options.command = flags.command();

  if (const std::optional<std::string> join = flags.Last("join")) {
    const size_t colon = join->rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return Error::InvalidArgument(
          "--join: expected the job's ADDR:PORT (its MASTER_ADDR:MASTER_PORT), got " + Quoted(*join));
    }
    Result<long> port = ParseInteger("--join's port", join->substr(colon + 1), 1, 65535);
    if (!port) return port.error();
    for (const char* flag : {"nproc-per-node", "nnodes", "node-rank", "master-addr", "master-port"}) {
      if (flags.Has(flag)) {
        return Error::InvalidArgument(std::string("--") + flag +
                                      ": --join starts standby ranks of a job already running, at the "
                                      "address --join gives; drop it");
      }
    }
    if (options.command.empty()) return Error::InvalidArgument("no program given after the flags");
    options.join = true;
    options.failover = true;
    options.ranks_per_node = 0;
    options.master_addr = join->substr(0, colon);
    options.master_port = static_cast<int>(*port);
    if (!flags.Has("standby")) options.standby = 1;
    if (options.standby == 0) return Error::InvalidArgument("--standby: --join starts at least one");
    if (!flags.Has("standby-index")) options.first_standby_index = static_cast<int>(getpid());
    return options;
  }
  if (flags.Has("standby-index")) {
    return Error::InvalidArgument(
        "--standby-index: only with --join (a job's own standby ranks are numbered "
        "by node)");
  }
  options.first_standby_index = options.node_rank * options.standby;
  if (!flags.Has("nproc-per-node")) return Error::InvalidArgument("-n: missing; say how many ranks to start");
  if (options.command.empty()) return Error::InvalidArgument("no program given after the flags");
  if (options.node_rank >= options.nnodes) {
    return Error::InvalidArgument("--node-rank: " + std::to_string(options.node_rank) +
                                  " is not below --nnodes " + std::to_string(options.nnodes));
  }
  if (options.standby > 0 && !options.failover) {
    return Error::InvalidArgument("--standby: standby ranks take a lost rank's place only under --failover");
  }
  if (options.nnodes > 1 && !flags.Has("master-port")) {
    return Error::InvalidArgument("--master-port: required when --nnodes is " +
                                  std::to_string(options.nnodes) + " (every node must agree on it)");
  }
  return options;
}

}  // namespace inferno
