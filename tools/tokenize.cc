// tokenize: prints the token ids of a text (no BOS), space-separated, as
// llama2.c's tokenizer encodes it.
//
//   tokenize --tokenizer tokenizer.bin --text "Once upon a time"
//
// Without --tokenizer, the byte-level tokenizer of the toy model is used.
#include <iostream>
#include <memory>

#include "engine/command_line.h"
#include "engine/tokenizer.h"

int main(int argc, char** argv) {
  using inferno::CommandLine;
  auto flags = CommandLine::Parse(argc, argv, {"tokenizer", "text"});
  if (!flags) {
    std::cerr << "tokenize: " << flags.error().message << "\n";
    return 2;
  }
  const std::optional<std::string> text = flags->Last("text");
  if (!text) {
    std::cerr << "tokenize: --text is required (usage: tokenize [--tokenizer FILE] --text TEXT)\n";
    return 2;
  }
  std::unique_ptr<inferno::Tokenizer> tokenizer = std::make_unique<inferno::ByteTokenizer>();
  if (const std::optional<std::string> path = flags->Last("tokenizer")) {
    auto loaded = inferno::BpeTokenizer::Load(*path);
    if (!loaded) {
      std::cerr << "tokenize: " << loaded.error().message << "\n";
      return 1;
    }
    tokenizer = std::move(*loaded);
  }
  const std::vector<int32_t> ids = tokenizer->Encode(*text);
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
  return 0;
}
