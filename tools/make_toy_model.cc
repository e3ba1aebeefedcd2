// make_toy_model: writes the project's embedded default model — a small,
// deterministic, randomly initialized Llama checkpoint with a byte-level
// vocabulary — as DIR/model.safetensors + DIR/config.json; or a model of
// another family's layout (Mistral, Qwen2 with biases, an explicit head_dim,
// RoPE scaling) for tests against a reference; or, with --format gguf, a
// Llama as one GGUF file (llama.cpp's conventions) with its matrices in
// --dtype and an embedded tokenizer (a llama2.c --tokenizer of the same
// vocabulary size, else the byte-fallback vocabulary).
//
//   make_toy_model --out DIR [--dim 64] [--layers 4] [--heads 4] [--kv-heads 2]
//                  [--vocab 259] [--seq-len 256] [--seed 1] [--architecture qwen2|qwen3]
//                  [--head-dim N] [--attention-bias] [--rope-scaling llama3 [--rope-factor 8]]
//                  [--architecture mixtral|qwen3_moe [--experts 4] [--experts-per-token 2]
//                   [--expert-hidden N] [--norm-topk-prob] [--decoder-sparse-step 1]
//                   [--mlp-only-layers 0,3] [--router-skew S]]
//   make_toy_model --format gguf --out FILE.gguf [--dtype f32|f16|bf16|q8_0|q4_0|q4_k|...]
//                  [--tokenizer tokenizer.bin] [shape flags]
//
// The same flags always give the same bytes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/command_line.h"
#include "engine/toy_model.h"
#include "model/architecture.h"
#include "tensor/tensor_info.h"
#include "text/gguf_tokenizer.h"

namespace inferno {
namespace {

// The flags of sliding windows and Gemma's attention and logits.
const FlagSpec kWindowFlags[] = {
    {"sliding-window", "N",
     "sliding layers attend to N positions (mistral, phi3: all layers; qwen2, qwen3: from layer 1; "
     "gemma3: every other layer from 0)"},
    {"query-pre-attn-scalar", "X", "gemma3: attention scores divided by sqrt(X) (default head size)"},
    {"final-logit-softcapping", "X", "gemma3: logits capped to X * tanh(logits / X)"}};

// --sliding-window and Gemma's --query-pre-attn-scalar and
// --final-logit-softcapping into `shape`; fails naming the flag.
Status ReadWindowFlags(const CommandLine& flags, const std::string& architecture, ToyModelShape& shape) {
  Result<int64_t> sliding_window = flags.Int("sliding-window", 0, 1, 1 << 20);
  Result<double> query_pre_attn_scalar = flags.Double("query-pre-attn-scalar", 0.0, 1.0, 1 << 20);
  Result<double> softcapping = flags.Double("final-logit-softcapping", 0.0, 0.01, 1e6);
  if (!sliding_window) return sliding_window.error();
  if (!query_pre_attn_scalar) return query_pre_attn_scalar.error();
  if (!softcapping) return softcapping.error();
  if (architecture != "gemma3" &&
      (flags.Has("query-pre-attn-scalar") || flags.Has("final-logit-softcapping"))) {
    return Error::InvalidArgument(
        "--query-pre-attn-scalar and --final-logit-softcapping are gemma3 settings");
  }
  if (architecture == "llama" && flags.Has("sliding-window")) {
    return Error::InvalidArgument(
        "--sliding-window: llama has no sliding window (mistral, qwen2, qwen3, gemma3, phi3 do)");
  }
  shape.sliding_window = flags.Has("sliding-window") ? *sliding_window : 0;
  shape.query_pre_attn_scalar =
      flags.Has("query-pre-attn-scalar") ? static_cast<float>(*query_pre_attn_scalar) : 0.0f;
  shape.final_logit_softcapping =
      flags.Has("final-logit-softcapping") ? static_cast<float>(*softcapping) : 0.0f;
  return {};
}

// --rope-scaling (by `factor`) into `shape`; fails naming an unknown kind.
Status ReadRopeScalingFlags(const CommandLine& flags, double factor, ToyModelShape& shape) {
  const std::optional<std::string> scaling = flags.Last("rope-scaling");
  if (!scaling) return {};
  shape.rope_scaling.factor = static_cast<float>(factor);
  if (*scaling == "linear") {
    shape.rope_scaling.type = RopeScaling::Type::kLinear;
  } else if (*scaling == "llama3") {
    shape.rope_scaling.type = RopeScaling::Type::kLlama3;
    shape.rope_scaling.original_max_position_embeddings = std::max<int64_t>(shape.seq_len / 4, 1);
  } else if (*scaling == "longrope") {
    // Phi-3's: factors rising from 1 to --rope-factor over the pairs, the
    // original context half of seq-len, the attention factor transformers
    // derives from their ratio (2).
    RopeScaling& longrope = shape.rope_scaling;
    longrope.type = RopeScaling::Type::kLongRope;
    longrope.original_max_position_embeddings = std::max<int64_t>(shape.seq_len / 2, 2);
    const int64_t half = (shape.head_dim > 0 ? shape.head_dim : shape.dim / shape.heads) / 2;
    for (int64_t i = 0; i < half; ++i) {
      const float rising = static_cast<float>(i) / static_cast<float>(std::max<int64_t>(half - 1, 1));
      longrope.short_factor.push_back(1.0f + (static_cast<float>(factor) - 1.0f) * rising);
      longrope.long_factor.push_back(2.0f * longrope.short_factor.back());
    }
    longrope.attention_factor = static_cast<float>(std::sqrt(
        1.0 + std::log(2.0) / std::log(static_cast<double>(longrope.original_max_position_embeddings))));
  } else {
    return Error::InvalidArgument("--rope-scaling: '" + *scaling + "' is not linear, llama3 or longrope");
  }
  return {};
}

// The flags of the mixture-of-experts families.
const FlagSpec kExpertFlags[] = {
    {"experts", "N", "mixtral, qwen3_moe: experts per sparse layer (default 4)"},
    {"experts-per-token", "K", "mixtral, qwen3_moe: experts chosen per position (default 2)"},
    {"expert-hidden", "N", "mixtral, qwen3_moe: an expert's hidden size (default: --hidden's)"},
    {"norm-topk-prob", "", "qwen3_moe: renormalise the chosen experts' weights (Mixtral always does)"},
    {"decoder-sparse-step", "N", "qwen3_moe: layer i has experts when (i + 1) % N == 0 (default 1)"},
    {"mlp-only-layers", "I,J", "qwen3_moe: layers with a dense MLP instead of experts"},
    {"router-skew", "S",
     "mixtral, qwen3_moe: route unevenly, for benchmarks of placement by load: experts scattered over the "
     "indices gain up to about 4*S in router logit (engine/toy_model.h; default 0: near-uniform)"}};

// The expert flags into `shape`, whose architecture is set (`architecture`
// is the flag's value); fails on a flag the family does not have.
Status ReadExpertFlags(const CommandLine& flags, const std::string& architecture, ToyModelShape& shape) {
  const Architecture::ExpertLayout& experts = FindArchitecture(shape.architecture)->experts;
  for (const FlagSpec& expert_flag : kExpertFlags) {
    const std::string_view flag = expert_flag.name;
    const bool qwen3_moe_only =
        flag == "norm-topk-prob" || flag == "decoder-sparse-step" || flag == "mlp-only-layers";
    if (flags.Has(std::string(flag)) &&
        (experts.count_field.empty() || (qwen3_moe_only && !experts.dense_layer_fields))) {
      return Error::InvalidArgument("--" + std::string(flag) + " does not apply to --architecture " +
                                    architecture);
    }
  }
  const std::tuple<const char*, int64_t, int64_t, int64_t*> ints[] = {
      {"experts", 1, 1 << 16, &shape.experts},
      {"experts-per-token", 1, 1 << 16, &shape.experts_per_token},
      {"expert-hidden", 1, 1 << 20, &shape.expert_hidden},
      {"decoder-sparse-step", 1, 1024, &shape.decoder_sparse_step}};
  for (const auto& [name, min, max, out] : ints) {
    Result<int64_t> value = flags.Int(name, *out, min, max);
    if (!value) return value.error();
    *out = *value;
  }
  shape.norm_topk_prob = flags.Has("norm-topk-prob");
  if (const std::optional<std::string> layers = flags.Last("mlp-only-layers")) {
    Result<std::vector<int64_t>> parsed = ParseIntList(*layers, "--mlp-only-layers");
    if (!parsed) return parsed.error();
    shape.mlp_only_layers = *parsed;
  }
  return {};
}

// --format gguf: writes the toy model of `config` to `out` in --dtype with
// --tokenizer's vocabulary; returns main's exit status.
int WriteGguf(const CommandLine& flags, const std::string& out, const ModelConfig& config, uint64_t seed,
              float router_skew) {
  std::string dtype_name = flags.Last("dtype").value_or("f32");
  std::transform(dtype_name.begin(), dtype_name.end(), dtype_name.begin(), ::toupper);
  const std::optional<DType> dtype = ParseDType(dtype_name);
  if (!dtype) {
    std::fprintf(stderr, "make_toy_model: --dtype: '%s' is not one of %s\n", flags.Last("dtype")->c_str(),
                 DTypeNames().c_str());
    return 2;
  }
  Result<GgufVocabulary> vocabulary = VocabularyForModel(flags.Last("tokenizer"), config.vocab_size);
  if (!vocabulary) {
    std::fprintf(stderr, "make_toy_model: %s\n", vocabulary.error().ToString().c_str());
    return 2;
  }
  if (Status written = WriteToyModelGguf(out, config, seed, *dtype, *vocabulary, router_skew); !written) {
    std::fprintf(stderr, "make_toy_model: %s\n", written.error().ToString().c_str());
    return 1;
  }
  std::printf("wrote %s (GGUF, %s matrices; dim %lld, %lld layers, vocab %lld)\n", out.c_str(),
              std::string(DTypeName(*dtype)).c_str(), static_cast<long long>(config.hidden_size),
              static_cast<long long>(config.num_hidden_layers), static_cast<long long>(config.vocab_size));
  return 0;
}

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) {
  using namespace inferno;
  CommandSpec spec{
      "make_toy_model",
      "--out DIR [shape flags]",
      "Writes the embedded toy model (deterministic random weights, byte-level vocabulary)\n"
      "as DIR/model.safetensors + DIR/config.json, or with --format gguf as one GGUF file.\n"
      "The same flags always give the same bytes.",
      {{"out", "DIR", "the folder to write (with --format gguf, the file)"},
       {"format", "safetensors|gguf", "the file format (default safetensors)"},
       {"dtype", "T",
        "gguf: every matrix's type, any of docs/dtypes.md: f32 (default), f16, bf16, q8_0, q4_0, ..., "
        "q6_k (norms stay f32; rows that are not whole blocks fall back as in llama.cpp)"},
       {"tokenizer", "FILE",
        "gguf: a llama2.c tokenizer.bin of --vocab tokens to embed (default: byte fallback)"},
       {"dim", "N", "model width (default 64)"},
       {"layers", "N", "transformer layers (default 4)"},
       {"heads", "N", "attention heads (default 4)"},
       {"kv-heads", "N", "key/value heads (default 2)"},
       {"vocab", "N", "vocabulary size (default 259, the byte tokenizer's)"},
       {"seq-len", "N", "context length (default 256)"},
       {"seed", "S", "weight seed (default 1)"},
       {"architecture", "llama|mistral|qwen2|qwen3|gemma3|phi3|mixtral|qwen3_moe",
        "the family's layout (default llama; qwen2 has q, k, v biases, qwen3 q and k norms, gemma3 "
        "Gemma 3's norms, GeGLU and local/global layers, phi3 fused qkv and gate_up projections, mixtral "
        "and qwen3_moe experts)"},
       {"head-dim", "N", "head size, if not dim / heads"},
       {"hidden", "N", "MLP hidden size (default: 8 * dim / 3 rounded up to a multiple of 32)"},
       {"attention-bias", "", "llama: q, k, v and o_proj biases"},
       {"tie-embeddings", "", "lm_head shares the token embedding (tie_word_embeddings)"},
       {"rope-scaling", "linear|llama3|longrope",
        "RoPE scaling by --rope-factor (llama3: original context seq-len / 4, low 1, high 4; longrope: "
        "factors 1 to --rope-factor, original context seq-len / 2)"},
       {"rope-factor", "F", "the RoPE scaling factor (default 8)"}},
      false,
      {"out"}};
  spec.flags.insert(spec.flags.end(), std::begin(kWindowFlags), std::end(kWindowFlags));
  spec.flags.insert(spec.flags.end(), std::begin(kExpertFlags), std::end(kExpertFlags));
  const CommandLine flags = ParseCommandLineOrExit(argc, argv, spec);
  const ToyModelShape defaults;
  Result<int64_t> values[] = {
      flags.Int("dim", defaults.dim, 2, 1 << 16),
      flags.Int("layers", defaults.layers, 1, 1024),
      flags.Int("heads", defaults.heads, 1, 1024),
      flags.Int("kv-heads", defaults.kv_heads, 1, 1024),
      flags.Int("vocab", defaults.vocab, 1, 1 << 24),
      flags.Int("seq-len", defaults.seq_len, 1, 1 << 20),
      flags.Int("seed", 1, 0, INT64_MAX),
      flags.Int("hidden", 0, 0, 1 << 20),
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
  shape.hidden = *values[7];
  const std::string architecture = flags.Last("architecture").value_or("llama");
  const std::map<std::string, std::string> architectures = {
      {"llama", "LlamaForCausalLM"},     {"mistral", "MistralForCausalLM"},   {"qwen2", "Qwen2ForCausalLM"},
      {"qwen3", "Qwen3ForCausalLM"},     {"gemma3", "Gemma3ForCausalLM"},     {"phi3", "Phi3ForCausalLM"},
      {"mixtral", "MixtralForCausalLM"}, {"qwen3_moe", "Qwen3MoeForCausalLM"}};
  if (!architectures.contains(architecture)) {
    std::fprintf(stderr, "make_toy_model: --architecture: '%s' is not one of %s\n", architecture.c_str(),
                 "llama, mistral, qwen2, qwen3, gemma3, phi3, mixtral, qwen3_moe");
    return 2;
  }
  shape.architecture = architectures.at(architecture);
  if (Status read = ReadExpertFlags(flags, architecture, shape); !read) {
    std::fprintf(stderr, "make_toy_model: %s\n", read.error().ToString().c_str());
    return 2;
  }
  shape.attention_bias = flags.Has("attention-bias");
  shape.tie_embeddings = flags.Has("tie-embeddings");
  Result<int64_t> head_dim = flags.Int("head-dim", 0, 2, 1 << 16);
  Result<double> rope_factor = flags.Double("rope-factor", 8.0, 1.0, 1024.0);
  Result<double> router_skew = flags.Double("router-skew", 0.0, 0.0, 100.0);
  for (const Error* error :
       {head_dim ? nullptr : &head_dim.error(), rope_factor ? nullptr : &rope_factor.error(),
        router_skew ? nullptr : &router_skew.error()}) {
    if (error != nullptr) {
      std::fprintf(stderr, "make_toy_model: %s\n", error->ToString().c_str());
      return 2;
    }
  }
  shape.head_dim = flags.Has("head-dim") ? *head_dim : 0;
  if (Status window = ReadWindowFlags(flags, architecture, shape); !window) {
    std::fprintf(stderr, "make_toy_model: %s\n", window.error().message.c_str());
    return 2;
  }
  if (Status scaling = ReadRopeScalingFlags(flags, *rope_factor, shape); !scaling) {
    std::fprintf(stderr, "make_toy_model: %s\n", scaling.error().message.c_str());
    return 2;
  }
  const ModelConfig config = ToyModelConfig(shape);
  if (Status valid = config.Validate("make_toy_model flags"); !valid) {
    std::fprintf(stderr, "make_toy_model: %s\n", valid.error().ToString().c_str());
    return 2;
  }
  const std::string out = *flags.Last("out");
  const std::string format = flags.Last("format").value_or("safetensors");
  if (format != "safetensors" && format != "gguf") {
    std::fprintf(stderr, "make_toy_model: --format: '%s' is not safetensors or gguf\n", format.c_str());
    return 2;
  }
  if (format == "gguf") {
    return WriteGguf(flags, out, config, static_cast<uint64_t>(*values[6]), static_cast<float>(*router_skew));
  }
  for (const char* gguf_only : {"dtype", "tokenizer"}) {
    if (flags.Has(gguf_only)) {
      std::fprintf(stderr, "make_toy_model: --%s applies to --format gguf\n", gguf_only);
      return 2;
    }
  }
  if (Status written =
          WriteToyModel(out, config, static_cast<uint64_t>(*values[6]), static_cast<float>(*router_skew));
      !written) {
    std::fprintf(stderr, "make_toy_model: %s\n", written.error().ToString().c_str());
    return 1;
  }
  std::printf("wrote %s/model.safetensors and %s/config.json (dim %lld, %lld layers, vocab %lld)\n",
              out.c_str(), out.c_str(), static_cast<long long>(shape.dim),
              static_cast<long long>(shape.layers), static_cast<long long>(shape.vocab));
  return 0;
}
