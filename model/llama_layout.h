// The Hugging Face Llama tensor layout: every tensor a model of a given
// ModelConfig needs, by name and shape (see checkpoint.h for the list).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "model/model_config.h"
#include "tensor/tensor_info.h"

namespace inferno {

inline constexpr char kEmbedTokensName[] = "model.embed_tokens.weight";
inline constexpr char kFinalNormName[] = "model.norm.weight";
inline constexpr char kLmHeadName[] = "lm_head.weight";

// The tensors of layer i are "model.layers.{i}.<suffix>" (Hugging Face's
// names; every reader, writer and the shard plan spell them through these).
inline constexpr std::string_view kAttentionNormSuffix = "input_layernorm.weight";
inline constexpr std::string_view kQProjSuffix = "self_attn.q_proj.weight";
inline constexpr std::string_view kKProjSuffix = "self_attn.k_proj.weight";
inline constexpr std::string_view kVProjSuffix = "self_attn.v_proj.weight";
inline constexpr std::string_view kOProjSuffix = "self_attn.o_proj.weight";
inline constexpr std::string_view kFfnNormSuffix = "post_attention_layernorm.weight";
inline constexpr std::string_view kGateProjSuffix = "mlp.gate_proj.weight";
inline constexpr std::string_view kUpProjSuffix = "mlp.up_proj.weight";
inline constexpr std::string_view kDownProjSuffix = "mlp.down_proj.weight";
inline constexpr std::string_view kQBiasSuffix = "self_attn.q_proj.bias";
inline constexpr std::string_view kKBiasSuffix = "self_attn.k_proj.bias";
inline constexpr std::string_view kVBiasSuffix = "self_attn.v_proj.bias";
inline constexpr std::string_view kOBiasSuffix = "self_attn.o_proj.bias";
// Per-head RMSNorm weights of q and k, (head_dim) each (Architecture::qk_norm).
inline constexpr std::string_view kQNormSuffix = "self_attn.q_norm.weight";
inline constexpr std::string_view kKNormSuffix = "self_attn.k_norm.weight";

// Gemma's norms: before the feed-forward (where Llama's is
// "post_attention_layernorm"), and after attention and after the
// feed-forward (Architecture::gemma_layout).
inline constexpr std::string_view kPreFeedForwardNormSuffix = "pre_feedforward_layernorm.weight";
inline constexpr std::string_view kPostAttentionNormSuffix = "post_attention_layernorm.weight";
inline constexpr std::string_view kPostFeedForwardNormSuffix = "post_feedforward_layernorm.weight";
// Phi-3's fused projections (Architecture::fused_projections).
inline constexpr std::string_view kQkvProjSuffix = "self_attn.qkv_proj.weight";
inline constexpr std::string_view kGateUpProjSuffix = "mlp.gate_up_proj.weight";

// The weights of every layer, in this order, followed by the biases the
// config asks for (kLayerBiasSuffixes).
inline constexpr std::string_view kLayerTensorSuffixes[] = {
    kAttentionNormSuffix, kQProjSuffix,    kKProjSuffix,  kVProjSuffix,    kOProjSuffix,
    kFfnNormSuffix,       kGateProjSuffix, kUpProjSuffix, kDownProjSuffix,
};

// q, k, v biases (config.qkv_bias), then the o_proj bias (config.o_proj_bias).
inline constexpr std::string_view kLayerBiasSuffixes[] = {kQBiasSuffix, kKBiasSuffix, kVBiasSuffix,
                                                          kOBiasSuffix};

// A mixture-of-experts layer (ModelConfig::IsSparseLayer) has, instead of
// gate_proj, up_proj and down_proj, a router (num_experts, hidden_size) and
// per expert the three matrices of a SwiGLU MLP of expert_intermediate_size,
// named by the family (Architecture::ExpertLayout), e.g. Mixtral's
// "block_sparse_moe.gate.weight" and "block_sparse_moe.experts.{e}.w1.weight".
enum class ExpertMatrix { kGate, kUp, kDown };
std::string RouterSuffix(const ModelConfig& config);
std::string ExpertSuffix(const ModelConfig& config, int64_t expert, ExpertMatrix matrix);

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
};

// "model.layers.{layer}.{suffix}".
std::string LayerTensorName(int64_t layer, std::string_view suffix);
// The layer index of a "model.layers.{i}.…" name; nullopt for other names.
std::optional<int64_t> LayerIndexOf(std::string_view name);
// The part after "model.layers.{i}." ("self_attn.q_proj.weight"); empty for
// other names.
std::string_view LayerTensorSuffix(std::string_view name);

// The tensors of layer `layer`, as the engine uses them: kLayerTensorSuffixes
// order (the feed-forward norm named FeedForwardNormSuffix; for a sparse
// layer, the router and each expert's gate, up and down in place of the
// MLP's), then the biases of the config, then q_norm and k_norm where the
// architecture has them, then Gemma's post-attention and post-feed-forward
// norms.
std::vector<TensorSpec> LayerTensorSpecs(const ModelConfig& config, int64_t layer);
// The norm before the feed-forward: kFfnNormSuffix, or Gemma's
// kPreFeedForwardNormSuffix.
std::string_view FeedForwardNormSuffix(const ModelConfig& config);

// A tensor stored as the rows of several of LayerTensorSpecs' back to back
// (Phi-3's qkv_proj: q_proj, k_proj, v_proj rows; gate_up_proj: gate_proj,
// up_proj rows). Readers present the parts; writers store the whole.
struct FusedTensor {
  TensorSpec stored;
  std::vector<TensorSpec> parts;
};
// The fused tensors of layer `layer`; empty unless the family fuses.
std::vector<FusedTensor> FusedLayerTensors(const ModelConfig& config, int64_t layer);
TensorSpec EmbeddingSpec(const ModelConfig& config);  // (vocab_size, hidden_size)
TensorSpec FinalNormSpec(const ModelConfig& config);  // (hidden_size)
TensorSpec LmHeadSpec(const ModelConfig& config);     // (vocab_size, hidden_size)

// Meta's interleaved RoPE layout, in which llama2.c and GGUF files store the
// q and k projections: each head's rotating pairs are adjacent rows (2i,
// 2i+1) where Hugging Face has them half a head apart (i, i + head_dim/2).
// The stored row of a (heads * head_dim, in) projection that holds Hugging
// Face row `hf_row`: h*hd + j*hd/2 + i -> h*hd + 2i + j.
int64_t InterleavedRopeRow(int64_t hf_row, int64_t head_dim);

// Every tensor the model needs: the embedding, each layer's, the final norm
// and, unless tie_word_embeddings, lm_head.
std::vector<TensorSpec> LlamaTensorSpecs(const ModelConfig& config);
// The same tensors as a Hugging Face file stores them: each FusedTensor's
// parts replaced by the whole, where the first part was.
std::vector<TensorSpec> StoredTensorSpecs(const ModelConfig& config);

// Checks that `tensors` holds every tensor of LlamaTensorSpecs(config) with
// its shape, and nothing else but RoPE tables some exporters add
// ("*.rotary_emb.inv_freq", which the engine computes itself): a tensor the
// model does not use (a bias the config does not declare, say) would
// otherwise be silently ignored. Fails naming `source`, the tensor and the
// shapes.
Status CheckTensorsMatchConfig(const std::vector<TensorInfo>& tensors, const ModelConfig& config,
                               const std::string& source);

}  // namespace inferno
