// tokenize: prints the token ids of a text (without the tokenizer's BOS),
// space-separated, as the tokenizer encodes it: a Hugging Face
// tokenizer.json (as the tokenizers library does, special tokens in the text
// matched), a llama2.c tokenizer.bin (as llama2.c does) or the byte-level
// tokenizer of the toy model.
//
//   tokenize --tokenizer tokenizer.json --text "Once upon a time"
//
// Without --tokenizer, the byte-level tokenizer is used.
#include <iostream>
#include <memory>

#include "base/command_line.h"
#include "text/tokenizer_files.h"

int main(int argc, char** argv) {
  const inferno::CommandSpec spec{
      "tokenize",
      "[--tokenizer FILE] --text TEXT",
      "Prints the token ids of TEXT (without BOS), space-separated, as the tokenizer encodes it.",
      {{"tokenizer", "FILE",
        "a tokenizer.json or a folder holding one, a llama2.c tokenizer.bin, or byte-level (the default)"},
       {"text", "TEXT", "the text to encode"}},
      false,
      {"text"}};
  const inferno::CommandLine flags = inferno::ParseCommandLineOrExit(argc, argv, spec);
  const std::optional<std::string> text = flags.Last("text");
  auto loaded = inferno::LoadTokenizer(flags.Last("tokenizer").value_or(inferno::kByteLevelTokenizer),
                                       /*model_folder=*/"");
  if (!loaded) {
    std::cerr << "tokenize: " << loaded.error().ToString() << "\n";
    return 1;
  }
  const std::vector<int32_t> ids = (*loaded)->tokenizer->Encode(*text);
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
  return 0;
}
