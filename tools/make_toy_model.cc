// make_toy_model: writes the project's embedded default model — a small,
// deterministic, randomly initialized Llama checkpoint with a byte-level
// vocabulary — as DIR/model.safetensors + DIR/config.json.
//
//   make_toy_model --out DIR [--dim 64] [--layers 4] [--heads 4] [--kv-heads 2]
//                  [--vocab 259] [--seq-len 256] [--seed 1]
//
// The same flags always give the same bytes.
#include <cstdio>

#include "base/command_line.h"
#include "engine/toy_model.h"

int main(int argc, char** argv) {
  using namespace inferno;
  const CommandSpec spec{
      "make_toy_model",
      "--out DIR [shape flags]",
      "Writes the embedded toy model (deterministic random weights, byte-level vocabulary)\n"
      "as DIR/model.safetensors + DIR/config.json. The same flags always give the same bytes.",
      {{"out", "DIR", "the folder to write (required)"},
       {"dim", "N", "model width (default 64)"},
       {"layers", "N", "transformer layers (default 4)"},
       {"heads", "N", "attention heads (default 4)"},
       {"kv-heads", "N", "key/value heads (default 2)"},
       {"vocab", "N", "vocabulary size (default 259, the byte tokenizer's)"},
       {"seq-len", "N", "context length (default 256)"},
       {"seed", "S", "weight seed (default 1)"}}};
  const CommandLine flags = ParseCommandLineOrExit(argc, argv, spec);
  if (!flags.Has("out")) {
    std::fprintf(stderr, "make_toy_model: --out DIR is required (see make_toy_model --help)\n");
    return 2;
  }
  const ToyModelShape defaults;
  Result<int64_t> values[] = {
      flags.Int("dim", defaults.dim, 2, 1 << 16),
      flags.Int("layers", defaults.layers, 1, 1024),
      flags.Int("heads", defaults.heads, 1, 1024),
      flags.Int("kv-heads", defaults.kv_heads, 1, 1024),
      flags.Int("vocab", defaults.vocab, 1, 1 << 24),
      flags.Int("seq-len", defaults.seq_len, 1, 1 << 20),
      flags.Int("seed", 1, 0, INT64_MAX),
  };
  for (const Result<int64_t>& value : values) {
    if (!value) {
      std::fprintf(stderr, "make_toy_model: %s\n", value.error().ToString().c_str());
      return 2;
    }
  }
  ToyModelShape shape;
  shape.dim = *values[0];
  shape.layers = *values[1];
  shape.heads = *values[2];
  shape.kv_heads = *values[3];
  shape.vocab = *values[4];
  shape.seq_len = *values[5];
  const ModelConfig config = ToyModelConfig(shape);
  if (Status valid = config.Validate("make_toy_model flags"); !valid) {
    std::fprintf(stderr, "make_toy_model: %s\n", valid.error().ToString().c_str());
    return 2;
  }
  const std::string out = *flags.Last("out");
  if (Status written = WriteToyModel(out, config, static_cast<uint64_t>(*values[6])); !written) {
    std::fprintf(stderr, "make_toy_model: %s\n", written.error().ToString().c_str());
    return 1;
  }
  std::printf("wrote %s/model.safetensors and %s/config.json (dim %lld, %lld layers, vocab %lld)\n",
              out.c_str(), out.c_str(), static_cast<long long>(shape.dim),
              static_cast<long long>(shape.layers), static_cast<long long>(shape.vocab));
  return 0;
}
