// TokenizerChatConfig: what chat formatting and prompt encoding need from a
// Hugging Face tokenizer_config.json — the chat template, the BOS and EOS
// token strings, and whether a prompt starts with BOS.
//
//   Result<TokenizerChatConfig> config = ReadTokenizerChatConfig(dir + "/tokenizer_config.json");
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"

namespace inferno {

struct TokenizerChatConfig {
  // "chat_template": a string, or a list of {"name", "template"} from which
  // the one named "default" is taken. Absent (or null) when the file has none.
  std::optional<std::string> chat_template;
  // "bos_token" / "eos_token": a string or an added-token object
  // {"content": ...}; absent when missing or null.
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // "add_bos_token": whether encoding a text puts bos_token first (transformers'
  // Llama tokenizers follow it over tokenizer.json's post-processor); absent
  // when the file does not say.
  std::optional<bool> add_bos_token;
};

// Parses the text of a tokenizer_config.json. Corruption for text that is not
// JSON or fields of the wrong type (naming the field); NotFound when
// chat_template is a list without a "default" entry.
Result<TokenizerChatConfig> ParseTokenizerChatConfig(std::string_view json);

// Reads and parses the file at `path`; Io when it cannot be read. Errors are
// prefixed with the path.
Result<TokenizerChatConfig> ReadTokenizerChatConfig(const std::string& path);

}  // namespace inferno
