// CommandLine: the one flag parser of every binary. A tool describes what it
// accepts in a CommandSpec; Parse checks argv against it and gives typed
// accessors that fail naming the flag and the value; Usage renders the spec
// as the tool's --help.
//
// Syntax: `--name value` or `--name=value` for a flag with a value; `--name`
// for a switch (a flag whose spec has no value_name); `-x value` for a flag
// with a one-letter short name. A flag may repeat (All returns every value in
// order, Last the final one). `--help` or `-h` anywhere before a command asks
// for the usage. A spec that takes a command (launch) ends the flags at the
// first argument that is not a flag, or after `--`; the rest is the command.
//
//   const CommandSpec spec{"tokenize", "--tokenizer FILE --text TEXT", "Prints token ids.", {
//       {"tokenizer", "FILE", "a llama2.c tokenizer.bin"},
//       {"text", "TEXT", "the text to encode"}}};
//   CommandLine flags = ParseCommandLineOrExit(argc, argv, spec);
//
// Thread-safety: a plain value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"

namespace inferno {

struct FlagSpec {
  std::string name;        // without dashes, e.g. "max-new-tokens"
  std::string value_name;  // what the value is, e.g. "N"; empty: a switch
  std::string help;        // one line
  char short_name = '\0';  // e.g. 'n' for -n; '\0': none
};

struct CommandSpec {
  std::string program;      // e.g. "infer"
  std::string synopsis;     // what follows the program name in the usage line
  std::string description;  // a few lines shown under the usage line
  std::vector<FlagSpec> flags;
  bool takes_command = false;  // trailing arguments are a command to run
  // Flags (names without dashes) that must be given; Usage marks them.
  std::vector<std::string> required = {};
};

class CommandLine {
 public:
  // Fails on a flag not in `spec` ("unknown flag --foo"), a flag without a
  // value, a switch given a value, a bare argument when the spec takes no
  // command, and, unless --help was asked for, missing flags of
  // spec.required ("--model and --out are required", naming the missing).
  static Result<CommandLine> Parse(int argc, const char* const* argv, const CommandSpec& spec);

  // True when --help or -h was given; nothing after it was parsed.
  bool help_requested() const { return help_requested_; }

  bool Has(const std::string& name) const;
  std::vector<std::string> All(const std::string& name) const;
  std::optional<std::string> Last(const std::string& name) const;

  // The flag's last value as a number in [min, max], or `fallback` when the
  // flag is absent.
  Result<int64_t> Int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  Result<double> Double(const std::string& name, double fallback, double min, double max) const;

  // The command after the flags (spec.takes_command), argv order.
  const std::vector<std::string>& command() const { return command_; }

 private:
  std::vector<std::pair<std::string, std::string>> flags_;  // name without "--", value ("" for a switch)
  std::vector<std::string> command_;
  bool help_requested_ = false;
};

// The --help text of `spec`: a usage line, the description, one line per
// flag with its value name and help.
std::string Usage(const CommandSpec& spec);

// A tool's main() parses with this: on --help it prints Usage(spec) to stdout
// and exits 0; on a bad command line it prints "<program>: <error> (see
// <program> --help)" to stderr and exits 2.
CommandLine ParseCommandLineOrExit(int argc, const char* const* argv, const CommandSpec& spec);

// Integers separated by spaces or commas, e.g. "1 300 45" or "2,3"; `what`
// names the flag in the error.
Result<std::vector<int64_t>> ParseIntList(const std::string& text, const std::string& what);

}  // namespace inferno
