// ToyModel: a deterministic, randomly initialized Llama-architecture model of
// any shape — the project's embedded default model (//tools:make_toy_model
// writes it as safetensors + config.json, or as GGUF) and the model of
// engine tests.
//
// Tensors carry Hugging Face Llama names and layouts (see loader/checkpoint.h).
// Values come from a fixed counter-based generator seeded by `seed` and the
// tensor's name, so they are the same on every machine and compiler.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "loader/gguf_vocabulary.h"
#include "model/model_config.h"
#include "tensor/tensor_info.h"

namespace inferno {

// The defaults of make_toy_model: a Llama of dim 64, 4 layers, 4 heads, 2 KV
// heads, a byte-level vocabulary of 259 (3 specials + 256 bytes), context
// 256. The other fields give the layouts of the other families: Qwen2's q, k,
// v biases, Qwen3's q and k norms, Llama's attention_bias, an explicit
// head_dim, RoPE scaling.
struct ToyModelShape {
  int64_t dim = 64;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t vocab = 259;
  int64_t seq_len = 256;
  bool tie_embeddings = false;
  std::string architecture = "LlamaForCausalLM";  // the name of an entry of kArchitectures
  int64_t head_dim = 0;                           // 0: dim / heads
  int64_t hidden = 0;                             // MLP hidden size; 0: see ToyModelConfig
  bool attention_bias = false;                    // Llama: q, k, v and o_proj biases
  RopeScaling rope_scaling = {};
  // Positions a sliding layer attends to; 0: none slides. Which layers
  // slide: every one (Mistral, Phi-3), from layer 1 on (the Qwen families'
  // max_window_layers = 1), every other one from layer 0 (Gemma's
  // sliding_window_pattern = 2). Llama has no window.
  int64_t sliding_window = 0;
  float query_pre_attn_scalar = 0.0f;    // Gemma; 0: head_dim
  float final_logit_softcapping = 0.0f;  // Gemma; 0: none
  // Mixtral, Qwen3-MoE: experts per sparse layer, chosen per position, and
  // each one's hidden size (0: `hidden`'s default); Qwen3-MoE's
  // norm_topk_prob, decoder_sparse_step and mlp_only_layers (Mixtral always
  // renormalises and has no dense layers).
  int64_t experts = 4;
  int64_t experts_per_token = 2;
  int64_t expert_hidden = 0;
  bool norm_topk_prob = false;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers = {};
};

// Hidden size of the MLP: shape.hidden, or by default 2/3 of 4 * dim,
// rounded up to a multiple of 32 (as Llama does). Gemma's settings are those
// of Gemma3TextConfig (GeGLU, RoPE bases 1e6 global and 1e4 local, norms
// scaling by 1 + weight) but for the shape's.
ModelConfig ToyModelConfig(const ToyModelShape& shape);

struct ToyTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;  // row-major
};

// Ids 0, 1, 2 (unk, BOS, EOS) of the byte-level vocabulary.
inline constexpr int64_t kToyModelSpecialIds = 3;

// Every tensor of the model of `config` (LlamaTensorSpecs), in checkpoint
// order: norms around 1 (around 0 where norms scale by 1 + weight), biases around 0, projections of scale
// 1 / sqrt(columns), the embedding of scale 1. The classifier
// rows of the special ids are zero (the embedding's, when tied).
// `router_skew` s > 0 (a mixture of experts) makes the routing uneven, for
// benchmarks of placement by load: every embedding row gets +4 in column 0,
// so the residual stream's column 0 is mostly positive, and each router's
// column 0 for expert e gets s · (1 - 2 r(e) / (E - 1)), r a fixed
// permutation of the E experts (r(e) = 37 e mod E when E is coprime to 37):
// the experts of small r(e) gain up to about 4s in logit, scattered over the
// expert indices. Precondition: config.Validate(...) succeeds.
std::vector<ToyTensor> MakeToyModelTensors(const ModelConfig& config, uint64_t seed,
                                           float router_skew = 0.0f);

// Writes `folder`/config.json and `folder`/model.safetensors (f32) of the toy
// model, creating `folder` if needed, fused tensors (Phi-3's) stored whole
// as Hugging Face stores them. Fails naming the file on I/O errors.
Status WriteToyModel(const std::string& folder, const ModelConfig& config, uint64_t seed,
                     float router_skew = 0.0f);

// Writes the toy model as the GGUF file `path` (loader/gguf_writer.h), its
// matrices stored as `matrix_type`, embedding `vocabulary`; `router_skew`
// as for MakeToyModelTensors.
Status WriteToyModelGguf(const std::string& path, const ModelConfig& config, uint64_t seed, DType matrix_type,
                         const GgufVocabulary& vocabulary, float router_skew = 0.0f);

}  // namespace inferno
