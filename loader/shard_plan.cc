#include "loader/shard_plan.h"

#include <limits>
#include <map>
#include <string_view>

#include "loader/llama_layout.h"
#include "loader/safetensors_format.h"

namespace inferno {
namespace {

// Bytes of `name` in the checkpoint; 0 if absent (the checkpoint was checked
// against its config on open).
int64_t BytesOf(const Checkpoint& checkpoint, const std::string& name) {
  Result<TensorInfo> info = checkpoint.Find(name);
  return info ? static_cast<int64_t>(TensorByteSize(*info)) : 0;
}

// Splits `layer_bytes` into `pp` contiguous non-empty stages minimizing the
// largest stage, counting `first_extra` bytes on stage 0 and `last_extra` on
// the last. Returns the layer count of each stage.
std::vector<int64_t> BalanceBytes(const std::vector<int64_t>& layer_bytes, int pp, int64_t first_extra,
                                  int64_t last_extra) {
  const int n = static_cast<int>(layer_bytes.size());
  std::vector<int64_t> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + layer_bytes[i];
  auto stage_cost = [&](int stage, int begin, int end) {
    return prefix[end] - prefix[begin] + (stage == 0 ? first_extra : 0) + (stage == pp - 1 ? last_extra : 0);
  };
  constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max();
  // best[s][e]: the smallest largest-stage cost of layers [0, e) on stages [0, s].
  std::vector<std::vector<int64_t>> best(pp, std::vector<int64_t>(n + 1, kInfinity));
  std::vector<std::vector<int>> split(pp, std::vector<int>(n + 1, 0));
  for (int e = 1; e <= n; ++e) best[0][e] = stage_cost(0, 0, e);
  for (int s = 1; s < pp; ++s) {
    for (int e = s + 1; e <= n; ++e) {
      for (int b = s; b < e; ++b) {
        if (best[s - 1][b] == kInfinity) continue;
        const int64_t cost = std::max(best[s - 1][b], stage_cost(s, b, e));
        if (cost < best[s][e]) {
          best[s][e] = cost;
          split[s][e] = b;
        }
      }
    }
  }
  std::vector<int64_t> sizes(pp);
  int end = n;
  for (int s = pp - 1; s > 0; --s) {
    sizes[s] = end - split[s][end];
    end = split[s][end];
  }
  sizes[0] = end;
  return sizes;
}

// The slices of layer `layer`'s tensors for tensor-parallel index t of tp:
// q, k, v (weights and biases), gate and up split by rows, o_proj and down
// by columns; norms and the o_proj bias whole.
std::vector<TensorSlice> LayerSlices(const ModelConfig& c, int64_t layer, int t, int tp) {
  const int64_t q_rows = c.num_attention_heads / tp * c.head_dim();
  const int64_t kv_rows = c.num_key_value_heads / tp * c.head_dim();
  const int64_t mlp_rows = c.intermediate_size / tp;
  // (split_dim, slice size) by tensor suffix; absent: whole.
  const std::map<std::string_view, std::pair<int, int64_t>> splits = {
      {"self_attn.q_proj.weight", {0, q_rows}},  {"self_attn.k_proj.weight", {0, kv_rows}},
      {"self_attn.v_proj.weight", {0, kv_rows}}, {"self_attn.o_proj.weight", {1, q_rows}},
      {"mlp.gate_proj.weight", {0, mlp_rows}},   {"mlp.up_proj.weight", {0, mlp_rows}},
      {"mlp.down_proj.weight", {1, mlp_rows}},   {"self_attn.q_proj.bias", {0, q_rows}},
      {"self_attn.k_proj.bias", {0, kv_rows}},   {"self_attn.v_proj.bias", {0, kv_rows}},
  };
  std::vector<TensorSlice> slices;
  for (const TensorSpec& spec : LayerTensorSpecs(c, layer)) {
    TensorSlice slice{spec.name, -1, 0, 0};
    const auto split = splits.find(LayerTensorSuffix(spec.name));
    if (tp > 1 && split != splits.end()) {
      slice.split_dim = split->second.first;
      slice.begin = t * split->second.second;
      slice.end = (t + 1) * split->second.second;
    }
    slices.push_back(std::move(slice));
  }
  return slices;
}

}  // namespace

std::vector<int64_t> SliceShape(const std::vector<int64_t>& shape, const TensorSlice& slice) {
  std::vector<int64_t> result = shape;
  if (slice.split_dim >= 0) result[static_cast<size_t>(slice.split_dim)] = slice.end - slice.begin;
  return result;
}

Result<ShardPlan> MakeShardPlan(const Checkpoint& checkpoint, int pp, int tp,
                                const std::optional<std::vector<int64_t>>& layers_per_stage) {
  const ModelConfig& c = checkpoint.config();
  const int64_t n_layers = c.num_hidden_layers;
  if (pp < 1) return Error::InvalidArgument("pp=" + std::to_string(pp) + " must be at least 1");
  if (tp < 1) return Error::InvalidArgument("tp=" + std::to_string(tp) + " must be at least 1");
  if (pp > n_layers) {
    return Error::InvalidArgument("pp=" + std::to_string(pp) + " exceeds the " + std::to_string(n_layers) +
                                  " layers of the model");
  }
  const std::pair<const char*, int64_t> divisible[] = {{"num_attention_heads", c.num_attention_heads},
                                                       {"num_key_value_heads", c.num_key_value_heads},
                                                       {"intermediate_size", c.intermediate_size}};
  for (const auto& [name, value] : divisible) {
    if (value % tp != 0) {
      return Error::InvalidArgument("tp=" + std::to_string(tp) + " does not divide " + name + " = " +
                                    std::to_string(value));
    }
  }

  std::vector<int64_t> sizes;
  if (layers_per_stage) {
    sizes = *layers_per_stage;
    if (static_cast<int>(sizes.size()) != pp) {
      return Error::InvalidArgument("--layers has " + std::to_string(sizes.size()) +
                                    " entries but pp=" + std::to_string(pp));
    }
    int64_t total = 0;
    for (size_t s = 0; s < sizes.size(); ++s) {
      if (sizes[s] < 1) {
        return Error::InvalidArgument("--layers entry " + std::to_string(s) + " = " +
                                      std::to_string(sizes[s]) + " must be at least 1");
      }
      total += sizes[s];
    }
    if (total != n_layers) {
      return Error::InvalidArgument("--layers sums to " + std::to_string(total) + " but the model has " +
                                    std::to_string(n_layers) + " layers");
    }
  } else {
    std::vector<int64_t> layer_bytes;
    for (int64_t layer = 0; layer < n_layers; ++layer) {
      int64_t bytes = 0;
      for (const TensorSpec& spec : LayerTensorSpecs(c, layer)) bytes += BytesOf(checkpoint, spec.name);
      layer_bytes.push_back(bytes);
    }
    const int64_t head_bytes = BytesOf(checkpoint, kFinalNormName) +
                               BytesOf(checkpoint, c.tie_word_embeddings ? kEmbedTokensName : kLmHeadName);
    sizes = BalanceBytes(layer_bytes, pp, BytesOf(checkpoint, kEmbedTokensName), head_bytes);
  }

  ShardPlan plan;
  plan.pp = pp;
  plan.tp = tp;
  plan.ranks.resize(static_cast<size_t>(pp * tp));
  int64_t first_layer = 0;
  for (int stage = 0; stage < pp; ++stage) {
    const LayerRange layers{first_layer, first_layer + sizes[static_cast<size_t>(stage)]};
    first_layer = layers.end;
    for (int t = 0; t < tp; ++t) {
      RankShard& shard = plan.ranks[static_cast<size_t>(ShardPlan::RankOf(stage, t, pp, tp))];
      shard.rank = ShardPlan::RankOf(stage, t, pp, tp);
      shard.stage = stage;
      shard.tp_index = t;
      shard.layers = layers;
      shard.has_embedding = stage == 0;
      shard.has_head = stage == pp - 1;
      if (shard.has_embedding) shard.tensors.push_back({kEmbedTokensName, -1, 0, 0});
      for (int64_t layer = layers.begin; layer < layers.end; ++layer) {
        for (TensorSlice& slice : LayerSlices(c, layer, t, tp)) shard.tensors.push_back(std::move(slice));
      }
      if (shard.has_head) {
        shard.tensors.push_back({kFinalNormName, -1, 0, 0});
        if (!c.tie_word_embeddings) {
          shard.tensors.push_back({kLmHeadName, -1, 0, 0});
        } else if (!shard.has_embedding) {
          shard.tensors.push_back({kEmbedTokensName, -1, 0, 0});
        }
      }
    }
  }
  return plan;
}

}  // namespace inferno
