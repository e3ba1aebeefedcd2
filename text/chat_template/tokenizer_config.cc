#include "text/chat_template/tokenizer_config.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace inferno {
namespace {

// A token field: a string, {"content": string}, null or absent.
Result<std::optional<std::string>> TokenField(const nlohmann::json& config, const char* name) {
  const auto it = config.find(name);
  if (it == config.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (it->is_object()) {
    const auto content = it->find("content");
    if (content != it->end() && content->is_string())
      return std::optional<std::string>(content->get<std::string>());
  }
  return Error::Corruption(std::string(name) +
                           " is neither a string nor an object with a string \"content\"");
}

Result<std::optional<std::string>> ChatTemplateField(const nlohmann::json& config) {
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (!it->is_array())
    return Error::Corruption("chat_template is neither a string nor a list of named templates");
  for (const nlohmann::json& entry : *it) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
        !entry["name"].is_string() || !entry["template"].is_string()) {
      return Error::Corruption(
          "chat_template: each entry of the list needs string \"name\" and \"template\"");
    }
    if (entry["name"] == "default") return std::optional<std::string>(entry["template"].get<std::string>());
  }
  return Error::NotFound("chat_template: the list of named templates has no \"default\"");
}

}  // namespace

Result<TokenizerChatConfig> ParseTokenizerChatConfig(std::string_view json) {
  const nlohmann::json config = nlohmann::json::parse(json, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return Error::Corruption("not valid JSON");
  if (!config.is_object()) return Error::Corruption("not a JSON object");
  TokenizerChatConfig out;
  Result<std::optional<std::string>> chat_template = ChatTemplateField(config);
  if (!chat_template) return chat_template.error();
  out.chat_template = std::move(*chat_template);
  Result<std::optional<std::string>> bos = TokenField(config, "bos_token");
  if (!bos) return bos.error();
  out.bos_token = std::move(*bos);
  Result<std::optional<std::string>> eos = TokenField(config, "eos_token");
  if (!eos) return eos.error();
  out.eos_token = std::move(*eos);
  if (const auto add_bos = config.find("add_bos_token"); add_bos != config.end() && !add_bos->is_null()) {
    if (!add_bos->is_boolean()) return Error::Corruption("add_bos_token is not a boolean");
    out.add_bos_token = add_bos->get<bool>();
  }
  return out;
}

Result<TokenizerChatConfig> ReadTokenizerChatConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::Io(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error::Io(path + ": read failed");
  Result<TokenizerChatConfig> config = ParseTokenizerChatConfig(text.str());
  if (!config) return config.error().Prefixed(path + ": ");
  return config;
}

}  // namespace inferno
