#include "engine/command_line.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace inferno {
namespace {

EngineResult<int64_t> ToInt(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) return EngineError{what + ": '" + text + "' is not an integer"};
  return static_cast<int64_t>(value);
}

}  // namespace

EngineResult<CommandLine> CommandLine::Parse(int argc, const char* const* argv, const std::vector<std::string>& known) {
  CommandLine command_line;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.rfind("--", 0) != 0 || argument.size() == 2) {
      return EngineError{"unexpected argument '" + argument + "' (flags are --name value)"};
    }
    const size_t equals = argument.find('=');
    std::string name = argument.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return EngineError{"unknown flag --" + name};
    }
    std::string value;
    if (equals != std::string::npos) {
      value = argument.substr(equals + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return EngineError{"flag --" + name + " needs a value"};
    }
    command_line.flags_.emplace_back(std::move(name), std::move(value));
  }
  return command_line;
}

bool CommandLine::Has(const std::string& name) const { return Last(name).has_value(); }

std::vector<std::string> CommandLine::All(const std::string& name) const {
  std::vector<std::string> values;
  for (const auto& [flag, value] : flags_) {
    if (flag == name) values.push_back(value);
  }
  return values;
}

std::optional<std::string> CommandLine::Last(const std::string& name) const {
  std::optional<std::string> last;
  for (const auto& [flag, value] : flags_) {
    if (flag == name) last = value;
  }
  return last;
}

EngineResult<int64_t> CommandLine::Int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
  const std::optional<std::string> text = Last(name);
  if (!text) return fallback;
  EngineResult<int64_t> value = ToInt(*text, "--" + name);
  if (!value) return value;
  if (*value < min || *value > max) {
    return EngineError{"--" + name + ": " + *text + " is outside [" + std::to_string(min) + ", " +
                       std::to_string(max) + "]"};
  }
  return value;
}

EngineResult<double> CommandLine::Double(const std::string& name, double fallback, double min, double max) const {
  const std::optional<std::string> text = Last(name);
  if (!text) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  if (text->empty() || *end != '\0') return EngineError{"--" + name + ": '" + *text + "' is not a number"};
  if (!(value >= min && value <= max)) {
    return EngineError{"--" + name + ": " + *text + " is outside [" + std::to_string(min) + ", " +
                       std::to_string(max) + "]"};
  }
  return value;
}

EngineResult<std::vector<int64_t>> ParseIntList(const std::string& text, const std::string& what) {
  std::vector<int64_t> values;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find_first_of(" ,\t\n", start);
    const std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) {
      EngineResult<int64_t> value = ToInt(item, what);
      if (!value) return value.error();
      values.push_back(*value);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return values;
}

}  // namespace inferno
