#include "server/continuation.h"

#include <charconv>

#include <nlohmann/json.hpp>

namespace inferno {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kCommentPrefix = ": inferno-tokens ";

}  // namespace

Result<std::optional<Continuation>> TakeContinuation(std::string& body) {
  Json json = Json::parse(body, nullptr, false);
  if (!json.is_object() || !json.contains(kContinueField)) return std::optional<Continuation>();
  const Json field = json.at(kContinueField);
  const std::string name = std::string("'") + kContinueField;
  if (!field.is_object()) return Error::InvalidArgument(name + "' must be an object");
  Continuation continuation;
  for (const auto& [key, value] : field.items()) {
    if (key == "tokens") {
      if (!value.is_array()) return Error::InvalidArgument(name + ".tokens' must be an array of token ids");
      for (const Json& token : value) {
        if (!token.is_number_integer() || token.get<int64_t>() < 0 || token.get<int64_t>() > INT32_MAX) {
          return Error::InvalidArgument(name + ".tokens' must be an array of token ids");
        }
        continuation.tokens.push_back(token.get<int32_t>());
      }
    } else if (key == "id") {
      if (!value.is_string()) return Error::InvalidArgument(name + ".id' must be a string");
      continuation.id = value.get<std::string>();
    } else if (key == "created") {
      if (!value.is_number_integer()) return Error::InvalidArgument(name + ".created' must be an integer");
      continuation.created = value.get<int64_t>();
    } else {
      return Error::InvalidArgument("unrecognized field " + name + "." + key + "'");
    }
  }
  json.erase(kContinueField);
  body = json.dump(-1, ' ', false, Json::error_handler_t::replace);
  return std::optional<Continuation>(std::move(continuation));
}

Result<std::string> WithContinuation(std::string_view body, const Continuation& continuation) {
  Json json = Json::parse(body, nullptr, false);
  if (!json.is_object()) return Error::InvalidArgument("the request body is not a JSON object");
  Json field = {{"tokens", continuation.tokens}};
  if (continuation.id) field["id"] = *continuation.id;
  if (continuation.created) field["created"] = *continuation.created;
  json[kContinueField] = std::move(field);
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string TokenComment(std::span<const int32_t> tokens) {
  std::string comment(kCommentPrefix);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) comment += ',';
    comment += std::to_string(tokens[i]);
  }
  return comment + "\n\n";
}

std::optional<std::vector<int32_t>> ParseTokenComment(std::string_view block) {
  if (block.substr(0, kCommentPrefix.size()) != kCommentPrefix) return std::nullopt;
  std::string_view rest = block.substr(kCommentPrefix.size());
  while (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  std::vector<int32_t> tokens;
  while (!rest.empty()) {
    int32_t token = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), token);
    if (error != std::errc() || token < 0) return std::nullopt;
    tokens.push_back(token);
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    if (!rest.empty()) {
      if (rest.front() != ',') return std::nullopt;
      rest.remove_prefix(1);
    }
  }
  return tokens;
}

}  // namespace inferno
