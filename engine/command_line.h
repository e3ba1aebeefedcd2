// CommandLine: the flags of a tool's argv, checked against the flags the tool
// accepts, with typed accessors that fail naming the flag and the value.
//
// Every flag takes a value, as `--name value` or `--name=value`; a flag may
// repeat (All returns every value in order, Last the final one).
//
// Thread-safety: a plain value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/engine_error.h"

namespace inferno {

class CommandLine {
 public:
  // Fails on a flag not in `known` ("unknown flag --foo"), a flag without a
  // value, and a bare argument.
  static EngineResult<CommandLine> Parse(int argc, const char* const* argv, const std::vector<std::string>& known);

  bool Has(const std::string& name) const;
  std::vector<std::string> All(const std::string& name) const;
  std::optional<std::string> Last(const std::string& name) const;

  // The flag's last value as a number in [min, max], or `fallback` when the
  // flag is absent.
  EngineResult<int64_t> Int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  EngineResult<double> Double(const std::string& name, double fallback, double min, double max) const;

 private:
  std::vector<std::pair<std::string, std::string>> flags_;  // name without "--", value
};

// Integers separated by spaces or commas, e.g. "1 300 45" or "2,3"; `what`
// names the flag in the error.
EngineResult<std::vector<int64_t>> ParseIntList(const std::string& text, const std::string& what);

}  // namespace inferno
