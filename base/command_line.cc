#include "base/command_line.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace inferno {
namespace {

Result<int64_t> ToInt(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    return Error::InvalidArgument(what + ": '" + text + "' is not an integer");
  }
  return static_cast<int64_t>(value);
}

const FlagSpec* FindFlag(const CommandSpec& spec, const std::string& argument) {
  for (const FlagSpec& flag : spec.flags) {
    if (argument == "--" + flag.name) return &flag;
    if (flag.short_name != '\0' && argument == std::string{'-', flag.short_name}) return &flag;
  }
  return nullptr;
}

std::string OutOfRange(const std::string& name, const std::string& text, const std::string& min,
                       const std::string& max) {
  return "--" + name + ": " + text + " is outside [" + min + ", " + max + "]";
}

}  // namespace

Result<CommandLine> CommandLine::Parse(int argc, const char* const* argv, const CommandSpec& spec) {
  CommandLine command_line;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--help" || argument == "-h") {
      command_line.help_requested_ = true;
      return command_line;
    }
    if (spec.takes_command && argument == "--") {
      ++i;
      break;
    }
    if (argument.size() < 2 || argument[0] != '-') {
      if (spec.takes_command) break;
      return Error::InvalidArgument("unexpected argument '" + argument + "' (flags are --name value)");
    }
    const size_t equals = argument.find('=');
    const bool inline_value = argument.rfind("--", 0) == 0 && equals != std::string::npos;
    const std::string written = inline_value ? argument.substr(0, equals) : argument;
    const FlagSpec* flag = FindFlag(spec, written);
    if (flag == nullptr) return Error::InvalidArgument("unknown flag " + written);
    std::string value;
    if (flag->value_name.empty()) {
      if (inline_value) return Error::InvalidArgument(written + " takes no value");
    } else if (inline_value) {
      value = argument.substr(equals + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Error::InvalidArgument("flag " + written + " needs a value (" + flag->value_name + ")");
    }
    command_line.flags_.emplace_back(flag->name, std::move(value));
  }
  for (; i < argc; ++i) command_line.command_.emplace_back(argv[i]);
  std::vector<std::string> missing;
  for (const std::string& name : spec.required) {
    if (!command_line.Has(name)) missing.push_back("--" + name);
  }
  if (!missing.empty()) {
    std::string list = missing.front();
    for (size_t m = 1; m < missing.size(); ++m)
      list += (m + 1 == missing.size() ? " and " : ", ") + missing[m];
    return Error::InvalidArgument(list + (missing.size() == 1 ? " is required" : " are required"));
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

Result<int64_t> CommandLine::Int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
  const std::optional<std::string> text = Last(name);
  if (!text) return fallback;
  Result<int64_t> value = ToInt(*text, "--" + name);
  if (!value) return value;
  if (*value < min || *value > max) {
    return Error::InvalidArgument(OutOfRange(name, *text, std::to_string(min), std::to_string(max)));
  }
  return value;
}

Result<double> CommandLine::Double(const std::string& name, double fallback, double min, double max) const {
  const std::optional<std::string> text = Last(name);
  if (!text) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  if (text->empty() || *end != '\0')
    return Error::InvalidArgument("--" + name + ": '" + *text + "' is not a number");
  if (!(value >= min && value <= max)) {
    return Error::InvalidArgument(OutOfRange(name, *text, std::to_string(min), std::to_string(max)));
  }
  return value;
}

std::string Usage(const CommandSpec& spec) {
  std::string usage = "usage: " + spec.program + " " + spec.synopsis + "\n";
  if (!spec.description.empty()) usage += "\n" + spec.description + "\n";
  std::vector<std::string> names;
  size_t width = std::string("-h, --help").size();
  for (const FlagSpec& flag : spec.flags) {
    std::string name = flag.short_name != '\0' ? std::string{'-', flag.short_name} + ", --" : "--";
    name += flag.name;
    if (!flag.value_name.empty()) name += " " + flag.value_name;
    width = std::max(width, name.size());
    names.push_back(std::move(name));
  }
  usage += "\nflags:\n";
  for (size_t i = 0; i < spec.flags.size(); ++i) {
    const bool required =
        std::find(spec.required.begin(), spec.required.end(), spec.flags[i].name) != spec.required.end();
    usage += "  " + names[i] + std::string(width + 2 - names[i].size(), ' ') + spec.flags[i].help +
             (required ? " (required)" : "") + "\n";
  }
  usage += "  -h, --help" + std::string(width + 2 - 10, ' ') + "print this usage and exit\n";
  return usage;
}

CommandLine ParseCommandLineOrExit(int argc, const char* const* argv, const CommandSpec& spec) {
  Result<CommandLine> parsed = CommandLine::Parse(argc, argv, spec);
  if (!parsed) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", spec.program.c_str(), parsed.error().message.c_str(),
                 spec.program.c_str());
    std::exit(2);
  }
  if (parsed->help_requested()) {
    std::fputs(Usage(spec).c_str(), stdout);
    std::exit(0);
  }
  return *std::move(parsed);
}

Result<std::vector<int64_t>> ParseIntList(const std::string& text, const std::string& what) {
  std::vector<int64_t> values;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find_first_of(" ,\t\n", start);
    const std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) {
      Result<int64_t> value = ToInt(item, what);
      if (!value) return value.error();
      values.push_back(*value);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return values;
}

}  // namespace inferno
