#include "text/chat_template/json_value.h"

#include <string>
#include <utility>

namespace inferno::chat {
namespace {

Result<Value> Convert(const nlohmann::ordered_json& json, const std::string& path) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::Bool(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::Int(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      if (json.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) return Value::Int(json.get<int64_t>());
      break;
    case nlohmann::ordered_json::value_t::string:
      return Value::String(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      for (size_t i = 0; i < json.size(); ++i) {
        Result<Value> item = Convert(json[i], path + "/" + std::to_string(i));
        if (!item) return item.error();
        items.push_back(std::move(*item));
      }
      return Value::List(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict entries;
      for (const auto& [key, value] : json.items()) {
        Result<Value> item = Convert(value, path + "/" + PrintableInMessage(key));
        if (!item) return item.error();
        entries.emplace_back(key, std::move(*item));
      }
      return Value::Dict(std::move(entries));
    }
    default:
      break;
  }
  return Error::InvalidArgument("a number " + json.dump() + " at " + (path.empty() ? "/" : path) +
                                ", which chat templates here cannot hold (integers only)");
}

}  // namespace

Result<Value> ValueFromJson(const nlohmann::ordered_json& json) { return Convert(json, ""); }

}  // namespace inferno::chat
