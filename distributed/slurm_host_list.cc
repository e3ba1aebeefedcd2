#include "distributed/slurm_host_list.h"

#include <cstdint>

namespace inferno {
namespace {

// One bracket group's values, e.g. "01-03,07" -> 01 02 03 07.
Result<std::vector<std::string>> ExpandRanges(std::string_view ranges, size_t max_hosts,
                                              const std::string& quoted) {
  std::vector<std::string> values;
  size_t start = 0;
  while (start <= ranges.size()) {
    const size_t comma = std::min(ranges.find(',', start), ranges.size());
    const std::string_view range = ranges.substr(start, comma - start);
    const size_t dash = range.find('-');
    const std::string_view low = range.substr(0, dash);
    const std::string_view high = dash == std::string_view::npos ? low : range.substr(dash + 1);
    const auto is_number = [](std::string_view digits) {
      return !digits.empty() && digits.size() <= 9 &&
             digits.find_first_not_of("0123456789") == std::string_view::npos;
    };
    if (!is_number(low) || !is_number(high)) {
      return Error::InvalidArgument("Slurm host list " + quoted + ": '" + std::string(range) +
                                    "' is not a number or a range like 01-03");
    }
    const int64_t first = std::stoll(std::string(low)), last = std::stoll(std::string(high));
    if (last < first) {
      return Error::InvalidArgument("Slurm host list " + quoted + ": the range '" + std::string(range) +
                                    "' ends below its start");
    }
    if (static_cast<uint64_t>(last - first) >= max_hosts - values.size()) {
      return Error::InvalidArgument("Slurm host list " + quoted + ": more than " + std::to_string(max_hosts) +
                                    " hosts");
    }
    for (int64_t value = first; value <= last; ++value) {
      std::string text = std::to_string(value);
      if (text.size() < low.size()) text.insert(0, low.size() - text.size(), '0');
      values.push_back(std::move(text));
    }
    start = comma + 1;
  }
  return values;
}

}  // namespace

Result<std::vector<std::string>> ExpandSlurmHostList(std::string_view list, size_t max_hosts) {
  const std::string quoted = "'" + std::string(list) + "'";
  std::vector<std::string> hosts;
  // Each pass takes one host expression: up to a comma outside brackets.
  size_t position = 0;
  while (true) {
    std::vector<std::string> expanded{""};
    const size_t expression_start = position;
    while (position < list.size() && list[position] != ',') {
      if (list[position] == ']') {
        return Error::InvalidArgument("Slurm host list " + quoted + ": ']' at character " +
                                      std::to_string(position + 1) + " without '['");
      }
      std::vector<std::string> parts;
      if (list[position] == '[') {
        const size_t close = list.find(']', position);
        const size_t nested = list.find('[', position + 1);
        if (close == std::string_view::npos || nested < close) {
          return Error::InvalidArgument("Slurm host list " + quoted + ": the '[' at character " +
                                        std::to_string(position + 1) + " is not closed");
        }
        Result<std::vector<std::string>> values =
            ExpandRanges(list.substr(position + 1, close - position - 1), max_hosts, quoted);
        if (!values) return std::move(values).error();
        parts = std::move(*values);
        position = close + 1;
      } else {
        const size_t end = std::min(list.find_first_of(",[]", position), list.size());
        parts.emplace_back(list.substr(position, end - position));
        position = end;
      }
      if (expanded.size() * parts.size() > max_hosts - hosts.size()) {
        return Error::InvalidArgument("Slurm host list " + quoted + ": more than " +
                                      std::to_string(max_hosts) + " hosts");
      }
      std::vector<std::string> product;
      for (const std::string& head : expanded) {
        for (const std::string& part : parts) product.push_back(head + part);
      }
      expanded = std::move(product);
    }
    if (position == expression_start) {
      return Error::InvalidArgument("Slurm host list " + quoted + ": empty host name at character " +
                                    std::to_string(position + 1));
    }
    hosts.insert(hosts.end(), expanded.begin(), expanded.end());
    if (position == list.size()) return hosts;
    ++position;  // the comma
  }
}

}  // namespace inferno
