// convert_to_gguf: writes any checkpoint inferno reads (a llama2.c .bin, a
// safetensors model, ...) as one GGUF file the way llama.cpp's converter
// does (loader/gguf_writer.h): llama.* keys, GGUF tensor names, q and k rows
// in Meta's interleaved RoPE order, matrices in the types --dtype gives them
// (loader/gguf_file_type.h: one type, or llama.cpp's Q4_K_M / Q5_K_M mix,
// blocks quantized as llama.cpp's llama-quantize writes them), an embedded
// tokenizer — the llama2.c --tokenizer when given (it must have the model's
// vocabulary size), else the byte-fallback vocabulary (token ids are the
// model's; text is encoded byte by byte).
//
//   convert_to_gguf --model stories260K.bin --out stories260K.gguf [--dtype f32] [--tokenizer tokenizer.bin]
//   convert_to_gguf --model hf_folder/ --out model-q4_k_m.gguf --dtype q4_k_m
#include <cstdio>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "loader/checkpoint.h"
#include "loader/gguf_file_type.h"
#include "loader/gguf_writer.h"
#include "model/llama_layout.h"
#include "tensor/tensor_info.h"
#include "text/gguf_tokenizer.h"

int main(int argc, char** argv) {
  using namespace inferno;
  const std::string file_types = GgufFileTypeNames();
  const CommandSpec spec{
      "convert_to_gguf",
      "--model PATH --out FILE.gguf [--dtype TYPE] [--tokenizer tokenizer.bin]",
      "Writes a checkpoint (llama2.c .bin, safetensors file or folder of F32/F16/BF16, GGUF) of a\n"
      "Llama model as one GGUF file with llama.cpp's conventions. Quantized matrices get the\n"
      "types and block bytes llama.cpp's llama-quantize gives them (no importance matrix):\n"
      "a single --dtype puts every matrix in it (as llama-quantize --pure); q4_k_m and q5_k_m\n"
      "are llama.cpp's mixes (output.weight, and attn_v and ffn_down of the first and last\n"
      "eighth of the layers and every third between, in Q6_K). Rows that are not whole blocks\n"
      "fall back as in llama.cpp: Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, Q2_K and Q3_K to\n"
      "Q4_0, IQ4_XS to IQ4_NL; F16 when no block fits.",
      {{"model", "PATH", "the checkpoint to convert"},
       {"out", "FILE", "the GGUF file to write"},
       {"dtype", "TYPE", "the matrices' type: " + file_types + " (default f32; norms stay f32)"},
       {"tokenizer", "FILE", "a llama2.c tokenizer.bin of the model's vocabulary (default: byte fallback)"}},
      false,
      {"model", "out"}};
  const CommandLine flags = ParseCommandLineOrExit(argc, argv, spec);
  const std::optional<GgufFileType> file_type = ParseGgufFileType(flags.Last("dtype").value_or("f32"));
  if (!file_type) {
    std::fprintf(stderr, "convert_to_gguf: --dtype: '%s' is not one of %s\n", flags.Last("dtype")->c_str(),
                 file_types.c_str());
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
  // llama2.c's q and k; the writer permutes them back as GGUF stores them),
  // read one at a time as the writer asks for it.
  std::vector<TensorInfo> tensors;
  for (const TensorSpec& spec : LlamaTensorSpecs(config))
    tensors.push_back({spec.name, DType::kF32, spec.shape});
  const auto read = [&](size_t index, std::span<float> values) {
    return (*checkpoint)->ReadF32(tensors[index].name, values);
  };
  const std::string out = *flags.Last("out");
  if (Status written =
          WriteGgufLlama(out, config, tensors, read, *file_type, *vocabulary, *flags.Last("model"));
      !written) {
    std::fprintf(stderr, "convert_to_gguf: %s\n", written.error().ToString().c_str());
    return 1;
  }
  std::printf("wrote %s (GGUF, %s matrices, %zu tensors)\n", out.c_str(),
              GgufFileTypeName(*file_type).c_str(), tensors.size());
  return 0;
}
