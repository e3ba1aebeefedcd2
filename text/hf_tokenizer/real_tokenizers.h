// Where tools/fetch_tokenizers.sh caches the real tokenizer files tests use:
// $INFERNO_TOKENIZERS_DIR if set (pass it with --test_env), else
// $INFERNO_CACHE/tokenizers, else <home of the user>/.cache/inferno/tokenizers
// (from the password database: Bazel gives tests their own $HOME). Each
// tokenizer is in <dir>/<name>/models/ (tokenizer.json, tokenizer_config.json).
//
// Thread-safety: reads the environment only.
#pragma once

#include <optional>
#include <string>

namespace inferno::hf {

// <dir>/<name>/models/tokenizer.json when that file exists.
std::optional<std::string> FindRealTokenizer(const std::string& name);

// The folder searched, for skip messages.
std::string RealTokenizersDir();

}  // namespace inferno::hf
