#include "engine/stage_weights.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include <glog/logging.h>

namespace inferno {
namespace {

// Sizes `out` to `count` floats at once, asking for transparent huge pages
// first: a weight matrix is then faulted in 2 MiB pages rather than 4 KiB
// ones, which was most of the loading time (the zeroing and the copy touch
// every page; on this machine's VM a 4 KiB fault costs more than its copy).
void AllocateWeights(std::vector<float>& out, size_t count) {
  out.reserve(count);
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(out.data()) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(out.data() + count)) & ~(kHugePage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // a hint: may fail
  out.resize(count);
}

// Reads tensor `name` (count elements) into out[offset, offset + count), growing `out` as needed
// (callers size it first when they read several tensors into it).
Status ReadInto(const Checkpoint& checkpoint, const std::string& name, std::vector<float>& out,
                int64_t offset, int64_t count) {
  if (offset + count > static_cast<int64_t>(out.size())) AllocateWeights(out, offset + count);
  Status status = checkpoint.ReadF32(name, std::span<float>(out).subspan(offset, count));
  if (!status) return status.error().Prefixed("loading stage weights: ");
  return {};
}

std::string LayerTensor(int64_t layer, const char* suffix) {
  return "model.layers." + std::to_string(layer) + "." + suffix;
}

Result<LayerWeights> LoadLayer(const Checkpoint& checkpoint, int64_t layer) {
  const ModelConfig& config = checkpoint.config();
  const int64_t dim = config.hidden_size;
  const int64_t q_dim = config.q_dim();
  const int64_t kv_dim = config.kv_dim();
  const int64_t hidden = config.intermediate_size;
  const int64_t head_dim = config.head_dim();
  LayerWeights weights;
  using Parts = std::vector<std::pair<const char*, int64_t>>;
  std::vector<std::pair<std::vector<float>*, Parts>> plan = {
      {&weights.attention_norm, {{"input_layernorm.weight", dim}}},
      {&weights.wqkv,
       {{"self_attn.q_proj.weight", q_dim * dim},
        {"self_attn.k_proj.weight", kv_dim * dim},
        {"self_attn.v_proj.weight", kv_dim * dim}}},
      {&weights.wo, {{"self_attn.o_proj.weight", dim * q_dim}}},
      {&weights.ffn_norm, {{"post_attention_layernorm.weight", dim}}},
      {&weights.w_gate_up, {{"mlp.gate_proj.weight", hidden * dim}, {"mlp.up_proj.weight", hidden * dim}}},
      {&weights.w_down, {{"mlp.down_proj.weight", dim * hidden}}},
  };
  if (config.qkv_bias) {
    plan.push_back({&weights.bqkv,
                    {{"self_attn.q_proj.bias", q_dim},
                     {"self_attn.k_proj.bias", kv_dim},
                     {"self_attn.v_proj.bias", kv_dim}}});
  }
  if (config.o_proj_bias) plan.push_back({&weights.bo, {{"self_attn.o_proj.bias", dim}}});
  for (const auto& [out, parts] : plan) {
    int64_t total = 0;
    for (const auto& [suffix, count] : parts) total += count;
    AllocateWeights(*out, total);
    int64_t offset = 0;
    for (const auto& [suffix, count] : parts) {
      if (Status s = ReadInto(checkpoint, LayerTensor(layer, suffix), *out, offset, count); !s) {
        return s.error();
      }
      offset += count;
    }
  }
  std::span<float> wqkv(weights.wqkv);
  HuggingFaceRopeRowsToAdjacent(wqkv.first(q_dim * dim), head_dim, dim);
  HuggingFaceRopeRowsToAdjacent(wqkv.subspan(q_dim * dim, kv_dim * dim), head_dim, dim);
  if (config.qkv_bias) {
    std::span<float> bqkv(weights.bqkv);
    HuggingFaceRopeRowsToAdjacent(bqkv.first(q_dim), head_dim, 1);
    HuggingFaceRopeRowsToAdjacent(bqkv.subspan(q_dim, kv_dim), head_dim, 1);
  }
  return weights;
}

}  // namespace

void HuggingFaceRopeRowsToAdjacent(std::span<float> rows, int64_t head_dim, int64_t cols) {
  const int64_t head_size = head_dim * cols;
  CHECK_EQ(static_cast<int64_t>(rows.size()) % head_size, 0) << "rows do not hold whole heads";
  std::vector<float> head(head_size);
  for (size_t start = 0; start < rows.size(); start += head_size) {
    float* source = rows.data() + start;
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      std::copy_n(source + i * cols, cols, head.data() + (2 * i) * cols);
      std::copy_n(source + (i + head_dim / 2) * cols, cols, head.data() + (2 * i + 1) * cols);
    }
    std::copy(head.begin(), head.end(), source);
  }
}

Result<StageWeights> LoadStageWeights(const Checkpoint& checkpoint, const RankShard& shard,
                                      RowRange classifier_rows, const Checkpoint& classifier_source,
                                      const LoadProgress& progress) {
  const ModelConfig& config = checkpoint.config();
  const int64_t dim = config.hidden_size;
  const int64_t vocab = config.vocab_size;
  CHECK(classifier_rows.begin >= 0 && classifier_rows.begin <= classifier_rows.end &&
        classifier_rows.end <= vocab)
      << "classifier rows [" << classifier_rows.begin << ", " << classifier_rows.end << ")";
  if (shard.layers.begin < 0 || shard.layers.end > config.num_hidden_layers ||
      shard.layers.begin >= shard.layers.end) {
    return Error::InvalidArgument("rank " + std::to_string(shard.rank) + ": layer range [" +
                                  std::to_string(shard.layers.begin) + ", " +
                                  std::to_string(shard.layers.end) + ") does not fit the model's " +
                                  std::to_string(config.num_hidden_layers) + " layers");
  }
  StageWeights weights;
  weights.layer_range = shard.layers;
  weights.is_first = shard.has_embedding;
  weights.is_last = shard.has_head;
  weights.classifier_rows = classifier_rows;
  if (shard.has_embedding) {
    if (Status s = ReadInto(checkpoint, "model.embed_tokens.weight", weights.token_embedding, 0, vocab * dim);
        !s) {
      return s.error();
    }
  }
  for (int64_t layer = shard.layers.begin; layer < shard.layers.end; ++layer) {
    Result<LayerWeights> loaded = LoadLayer(checkpoint, layer);
    if (!loaded) return loaded.error();
    weights.layers.push_back(std::move(*loaded));
    if (progress) progress(layer + 1 - shard.layers.begin, shard.layers.size());
  }
  if (shard.has_head) {
    if (Status s = ReadInto(checkpoint, "model.norm.weight", weights.final_norm, 0, dim); !s)
      return s.error();
  }
  const bool tied_here = config.tie_word_embeddings && shard.has_embedding;
  if (classifier_rows.size() > 0 && !tied_here) {
    const std::string name = config.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    weights.classifier.resize(classifier_rows.size() * dim);
    Status status =
        classifier_source.ReadRowsF32(name, classifier_rows.begin, classifier_rows.end, weights.classifier);
    if (!status) return status.error().Prefixed("loading classifier rows: ");
  }
  return weights;
}

}  // namespace inferno
