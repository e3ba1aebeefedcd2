// make_toy_model: writes the project's embedded default model — a small,
// deterministic, randomly initialized Llama checkpoint with a byte-level
// vocabulary — as DIR/model.safetensors + DIR/config.json.
//
//   make_toy_model --out DIR [--dim 64] [--layers 4] [--heads 4] [--kv-heads 2]
//                  [--vocab 259] [--seq-len 256] [--seed 1]
//
// The same flags always give the same bytes.
#include <cstdio>

#include "engine/command_line.h"
#include "engine/toy_model.h"

int main(int argc, char** argv) {
  using namespace inferno;
  auto flags = CommandLine::Parse(argc, argv, {"out", "dim", "layers", "heads", "kv-heads", "vocab", "seq-len", "seed"});
  if (!flags) {
    std::fprintf(stderr, "make_toy_model: %s\n", flags.error().message.c_str());
    return 2;
  }
  if (!flags->Has("out")) {
    std::fprintf(stderr, "make_toy_model: --out DIR is required\n");
    return 2;
  }
  const ToyModelShape defaults;
  EngineResult<int64_t> values[] = {
      flags->Int("dim", defaults.dim, 2, 1 << 16),        flags->Int("layers", defaults.layers, 1, 1024),
      flags->Int("heads", defaults.heads, 1, 1024),       flags->Int("kv-heads", defaults.kv_heads, 1, 1024),
      flags->Int("vocab", defaults.vocab, 1, 1 << 24),    flags->Int("seq-len", defaults.seq_len, 1, 1 << 20),
      flags->Int("seed", 1, 0, INT64_MAX),
  };
  for (const EngineResult<int64_t>& value : values) {
    if (!value) {
      std::fprintf(stderr, "make_toy_model: %s\n", value.error().message.c_str());
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
  if (LoadStatus valid = config.Validate("make_toy_model flags"); !valid) {
    std::fprintf(stderr, "make_toy_model: %s\n", valid.error().message.c_str());
    return 2;
  }
  const std::string out = *flags->Last("out");
  if (EngineStatus written = WriteToyModel(out, config, static_cast<uint64_t>(*values[6])); !written) {
    std::fprintf(stderr, "make_toy_model: %s\n", written.error().message.c_str());
    return 1;
  }
  std::printf("wrote %s/model.safetensors and %s/config.json (dim %lld, %lld layers, vocab %lld)\n", out.c_str(),
              out.c_str(), static_cast<long long>(shape.dim), static_cast<long long>(shape.layers),
              static_cast<long long>(shape.vocab));
  return 0;
}
