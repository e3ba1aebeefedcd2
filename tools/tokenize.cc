// tokenize: prints the token ids of a text (no BOS), space-separated, as
// llama2.c's tokenizer encodes it.
//
//   tokenize --tokenizer tokenizer.bin --text "Once upon a time"
//
// Without --tokenizer, the byte-level tokenizer of the toy model is used.
#include <iostream>
#include <memory>

#include "base/command_line.h"
#include "engine/tokenizer.h"

int main(int argc, char** argv) {
  const inferno::CommandSpec spec{
      "tokenize",
      "[--tokenizer FILE] --text TEXT",
      "Prints the token ids of TEXT (no BOS), space-separated, as llama2.c's tokenizer encodes it.",
      {{"tokenizer", "FILE", "a llama2.c tokenizer.bin (default: the toy model's byte-level tokenizer)"},
       {"text", "TEXT", "the text to encode (required)"}}};
  const inferno::CommandLine flags = inferno::ParseCommandLineOrExit(argc, argv, spec);
  const std::optional<std::string> text = flags.Last("text");
  if (!text) {
    std::cerr << "tokenize: --text is required (see tokenize --help)\n";
    return 2;
  }
  std::unique_ptr<inferno::Tokenizer> tokenizer = std::make_unique<inferno::ByteTokenizer>();
  if (const std::optional<std::string> path = flags.Last("tokenizer")) {
    auto loaded = inferno::BpeTokenizer::Load(*path);
    if (!loaded) {
      std::cerr << "tokenize: " << loaded.error().ToString() << "\n";
      return 1;
    }
    tokenizer = std::move(*loaded);
  }
  const std::vector<int32_t> ids = tokenizer->Encode(*text);
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
  return 0;
}
