// convert_to_gguf: writes any checkpoint inferno reads (a llama2.c .bin, a
// safetensors model, ...) as one GGUF file the way llama.cpp's converter
// does (loader/gguf_writer.h): llama.* keys, GGUF tensor names, q and k rows
// in Meta's interleaved RoPE order, matrices in --dtype, an embedded
// tokenizer — the llama2.c --tokenizer when given (it must have the model's
// vocabulary size), else the byte-fallback vocabulary (token ids are the
// model's; text is encoded byte by byte).
//
//   convert_to_gguf --model stories260K.bin --out stories260K.gguf [--dtype f32] [--tokenizer tokenizer.bin]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "loader/checkpoint.h"
#include "loader/gguf_writer.h"
#include "model/llama_layout.h"
#include "tensor/tensor_info.h"
#include "text/gguf_tokenizer.h"

int main(int argc, char** argv) {
  using namespace inferno;
  const CommandSpec spec{
      "convert_to_gguf",
      "--model PATH --out FILE.gguf [--dtype f32|f16|bf16|q8_0|q4_0] [--tokenizer tokenizer.bin]",
      "Writes a checkpoint (llama2.c .bin, safetensors file or folder, GGUF) of a Llama model as one\n"
      "GGUF file with llama.cpp's conventions.",
      {{"model", "PATH", "the checkpoint to convert"},
       {"out", "FILE", "the GGUF file to write"},
       {"dtype", "f32|f16|bf16|q8_0|q4_0", "the type of the matrices (default f32; norms stay f32)"},
       {"tokenizer", "FILE", "a llama2.c tokenizer.bin of the model's vocabulary (default: byte fallback)"}},
      false,
      {"model", "out"}};
  const CommandLine flags = ParseCommandLineOrExit(argc, argv, spec);
  std::string dtype_name = flags.Last("dtype").value_or("f32");
  std::transform(dtype_name.begin(), dtype_name.end(), dtype_name.begin(), ::toupper);
  const std::optional<DType> dtype = ParseDType(dtype_name);
  if (!dtype) {
    std::fprintf(stderr, "convert_to_gguf: --dtype: '%s' is not one of %s\n", flags.Last("dtype")->c_str(),
                 DTypeNames().c_str());
    return 2;
  }
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(*flags.Last("model"));
  if (!checkpoint) {
    std::fprintf(stderr, "convert_to_gguf: --model: %s\n", checkpoint.error().ToString().c_str());
    return 1;
  }
  const ModelConfig& config = (*checkpoint)->config();
  Result<GgufVocabulary> vocabulary = VocabularyForModel(flags.Last("tokenizer"), config.vocab_size);
  if (!vocabulary) {
    std::fprintf(stderr, "convert_to_gguf: %s\n", vocabulary.error().ToString().c_str());
    return 2;
  }
  // Every tensor in f32, Hugging Face layout (the checkpoint un-permutes
  // llama2.c's q and k; the writer permutes them back as GGUF stores them).
  const std::vector<TensorSpec> specs = LlamaTensorSpecs(config);
  std::vector<std::vector<float>> values(specs.size());
  std::vector<NamedTensorF32> tensors;
  for (size_t i = 0; i < specs.size(); ++i) {
    values[i].resize(
        static_cast<size_t>(TensorInfo{specs[i].name, DType::kF32, specs[i].shape}.num_elements()));
    if (Status read = (*checkpoint)->ReadF32(specs[i].name, values[i]); !read) {
      std::fprintf(stderr, "convert_to_gguf: %s\n", read.error().ToString().c_str());
      return 1;
    }
    tensors.push_back({specs[i].name, specs[i].shape, values[i]});
  }
  const std::string out = *flags.Last("out");
  if (Status written = WriteGgufLlama(out, config, tensors, *dtype, *vocabulary, *flags.Last("model"));
      !written) {
    std::fprintf(stderr, "convert_to_gguf: %s\n", written.error().ToString().c_str());
    return 1;
  }
  std::printf("wrote %s (GGUF, %s matrices, %zu tensors)\n", out.c_str(),
              std::string(DTypeName(*dtype)).c_str(), tensors.size());
  return 0;
}
