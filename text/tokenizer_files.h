// LoadTokenizer: the tokenizer a job uses — from --tokenizer, or found beside
// the model — whatever its format: a Hugging Face tokenizer.json, a llama2.c
// tokenizer.bin, or the byte-level tokenizer of the toy model.
//
// Thread-safety: a pure function of the files it reads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/model_config.h"
#include "text/chat_template/tokenizer_config.h"
#include "text/tokenizer.h"

namespace inferno {

struct LoadedTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;
  std::string source;  // the file read, or "byte-level"
  std::string sha256;  // of the file's bytes (hex), or "byte-level"
  // Ids that end a sequence by the tokenizer's own convention: llama2.c's
  // EOS and BOS for tokenizer.bin and the byte-level tokenizer; for a
  // tokenizer.json, the eos_token of the tokenizer_config.json beside it;
  // a GGUF file's tokenizer.ggml.eos_token_id.
  std::vector<int32_t> stop_ids;
  // The tokenizer_config.json beside a tokenizer.json (chat template, BOS
  // and EOS strings), when there is one.
  std::optional<TokenizerChatConfig> chat_config;
  // The id a text prompt starts with: the tokenizer's (its post-processor's
  // for a tokenizer.json), unless tokenizer_config.json's add_bos_token says
  // otherwise (false: none; true: its bos_token).
  std::optional<int32_t> bos_id;
};

// The value of --tokenizer that selects the byte-level tokenizer.
inline constexpr char kByteLevelTokenizer[] = "byte-level";

// `flag` (--tokenizer): kByteLevelTokenizer, a tokenizer.json, a folder
// holding one, a GGUF file (its embedded tokenizer: text/gguf_tokenizer.h),
// or a llama2.c tokenizer.bin (told apart by content: the GGUF magic, a JSON
// object or neither). Without it: the tokenizer of `model_folder` when it is
// a GGUF file, else `model_folder`'s tokenizer.json when there is one, else
// nullopt (`model_folder` may be empty). A tokenizer.json's
// tokenizer_config.json is read from the same folder. Errors name the file:
// NotFound (no file, a folder without tokenizer.json), Corruption and
// Unimplemented (see HfTokenizer and BpeTokenizer), Io.
Result<std::optional<LoadedTokenizer>> LoadTokenizer(const std::optional<std::string>& flag,
                                                     const std::string& model_folder);

// The ids that end a sequence: the model's eos_token_id (config.json and
// generation_config.json) followed by the tokenizer's own stop ids, each
// once; ids outside the model's vocabulary are an InvalidArgument error
// naming them.
Result<std::vector<int32_t>> StopIds(const ModelConfig& config, const LoadedTokenizer& tokenizer);

}  // namespace inferno
