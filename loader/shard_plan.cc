#include "loader/shard_plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include <glog/logging.h>

#include "model/llama_layout.h"

namespace inferno {
namespace {

// Every expert of a sparse layer, none of a dense one.
std::vector<int32_t> AllExperts(const ModelConfig& c, int64_t layer) {
  std::vector<int32_t> all(static_cast<size_t>(c.IsSparseLayer(layer) ? c.num_experts : 0));
  for (size_t e = 0; e < all.size(); ++e) all[e] = static_cast<int32_t>(e);
  return all;
}

// A slice of `name` on `split_dim` covering `range` of `full` items; whole
// when the range covers them all.
TensorSlice SliceOf(std::string name, int split_dim, RowRange range, int64_t full) {
  if (range.begin == 0 && range.end == full) return {std::move(name), -1, 0, 0};
  return {std::move(name), split_dim, range.begin, range.end};
}

// The slices of layer `layer`'s tensors held by `shard` (heads and hidden
// units set) of a stage of `tp` ranks: q, k, v (weights and biases), gate
// and up by rows, o_proj and down by columns; norms and the o_proj bias
// whole. A sparse layer's router is whole; each expert's hidden units are
// divided over the stage as the dense MLP's are, or under expert parallelism
// the rank's experts are whole and the others absent.
std::vector<TensorSlice> LayerSlices(const ModelConfig& c, int64_t layer, const RankShard& shard, int tp,
                                     bool expert_parallel) {
  const int64_t head_dim = c.head_dim();
  const RowRange q{shard.heads.begin * head_dim, shard.heads.end * head_dim};
  const RowRange kv{shard.kv_heads.begin * head_dim, shard.kv_heads.end * head_dim};
  const RowRange& units = shard.hidden_units;
  // (split_dim, range, full size) by tensor suffix; absent: whole.
  struct Split {
    int dim;
    RowRange range;
    int64_t full;
  };
  const std::map<std::string_view, Split> splits = {
      {kQProjSuffix, {0, q, c.q_dim()}},
      {kKProjSuffix, {0, kv, c.kv_dim()}},
      {kVProjSuffix, {0, kv, c.kv_dim()}},
      {kOProjSuffix, {1, q, c.q_dim()}},
      {kGateProjSuffix, {0, units, c.intermediate_size}},
      {kUpProjSuffix, {0, units, c.intermediate_size}},
      {kDownProjSuffix, {1, units, c.intermediate_size}},
      {kQBiasSuffix, {0, q, c.q_dim()}},
      {kKBiasSuffix, {0, kv, c.kv_dim()}},
      {kVBiasSuffix, {0, kv, c.kv_dim()}},
  };
  std::map<std::string, Split, std::less<>> expert_splits;
  std::set<std::string, std::less<>> others_experts;
  if (c.IsSparseLayer(layer)) {
    const int64_t full = c.expert_intermediate_size;
    const RowRange expert_units = expert_parallel ? RowRange{0, full} : EvenPart(full, tp, shard.tp_index);
    const std::vector<int32_t>& held = shard.ExpertsOf(layer);
    for (int32_t e = 0; e < c.num_experts; ++e) {
      if (!std::binary_search(held.begin(), held.end(), e)) {
        for (ExpertMatrix matrix : {ExpertMatrix::kGate, ExpertMatrix::kUp, ExpertMatrix::kDown})
          others_experts.insert(ExpertSuffix(c, e, matrix));
        continue;
      }
      expert_splits[ExpertSuffix(c, e, ExpertMatrix::kGate)] = {0, expert_units, full};
      expert_splits[ExpertSuffix(c, e, ExpertMatrix::kUp)] = {0, expert_units, full};
      expert_splits[ExpertSuffix(c, e, ExpertMatrix::kDown)] = {1, expert_units, full};
    }
  }
  std::vector<TensorSlice> slices;
  for (const TensorSpec& spec : LayerTensorSpecs(c, layer)) {
    const std::string_view suffix = LayerTensorSuffix(spec.name);
    if (others_experts.contains(suffix)) continue;
    const Split* split = nullptr;
    if (const auto dense = splits.find(suffix); dense != splits.end()) split = &dense->second;
    if (const auto expert = expert_splits.find(suffix); expert != expert_splits.end())
      split = &expert->second;
    if (split == nullptr) {
      slices.push_back({spec.name, -1, 0, 0});
    } else {
      slices.push_back(SliceOf(spec.name, split->dim, split->range, split->full));
    }
  }
  return slices;
}

Status CheckLayers(const std::vector<int64_t>& sizes, int pp, int64_t n_layers) {
  if (static_cast<int>(sizes.size()) != pp) {
    return Error::InvalidArgument("--layers has " + std::to_string(sizes.size()) + " entries but --pp is " +
                                  std::to_string(pp));
  }
  int64_t total = 0;
  for (size_t s = 0; s < sizes.size(); ++s) {
    if (sizes[s] < 1) {
      return Error::InvalidArgument("--layers entry " + std::to_string(s) + " = " + std::to_string(sizes[s]) +
                                    " must be at least 1");
    }
    total += sizes[s];
  }
  if (total != n_layers) {
    return Error::InvalidArgument("--layers sums to " + std::to_string(total) + " but the model has " +
                                  std::to_string(n_layers) + " layers");
  }
  return {};
}

}  // namespace

RowRange ShardPlan::TpClassifierRows(int tp_index) const {
  RowRange rows{INT64_MAX, 0};
  for (const RankShard& shard : ranks) {
    if (shard.tp_index != tp_index) continue;
    rows.begin = std::min(rows.begin, shard.classifier_rows.begin);
    rows.end = std::max(rows.end, shard.classifier_rows.end);
  }
  CHECK_LE(rows.begin, rows.end) << "no rank of tensor-parallel index " << tp_index;
  return rows;
}

ExpertPlacement ShardPlan::Placement(int64_t num_hidden_layers, int64_t num_experts) const {
  ExpertPlacement placement;
  placement.owner.resize(static_cast<size_t>(num_hidden_layers));
  // listed[layer][e]: the indices listing expert e, increasing.
  std::vector<std::vector<std::vector<int>>> listed(static_cast<size_t>(num_hidden_layers));
  bool copied = false;
  for (const RankShard& shard : ranks) {
    for (int64_t layer = std::max<int64_t>(shard.layers.begin, 0);
         layer < shard.layers.end && layer < num_hidden_layers; ++layer) {
      const std::vector<int32_t>& held = shard.ExpertsOf(layer);
      std::vector<std::vector<int>>& by_expert = listed[static_cast<size_t>(layer)];
      if (!held.empty()) by_expert.resize(static_cast<size_t>(num_experts));
      for (int32_t e : held) {
        if (e < 0 || e >= num_experts) continue;
        std::vector<int>& indices = by_expert[static_cast<size_t>(e)];
        indices.insert(std::upper_bound(indices.begin(), indices.end(), shard.tp_index), shard.tp_index);
        copied = copied || indices.size() > 1;
      }
    }
  }
  if (copied) placement.copies.resize(static_cast<size_t>(num_hidden_layers));
  for (size_t layer = 0; layer < listed.size(); ++layer) {
    const std::vector<std::vector<int>>& by_expert = listed[layer];
    std::vector<int>& owner = placement.owner[layer];
    owner.assign(by_expert.size(), -1);
    if (copied && !by_expert.empty()) placement.copies[layer].resize(static_cast<size_t>(tp));
    for (size_t e = 0; e < by_expert.size(); ++e) {
      if (by_expert[e].empty()) continue;
      owner[e] = by_expert[e].front();
      for (size_t i = 1; i < by_expert[e].size(); ++i) {
        placement.copies[layer][static_cast<size_t>(by_expert[e][i])].push_back(static_cast<int32_t>(e));
      }
    }
  }
  return placement;
}

void ShardPlan::SetExpertHolders(int64_t num_experts) {
  for (int stage = 0; stage < pp; ++stage) {
    const RankShard& first = ranks[static_cast<size_t>(RankOf(stage, 0))];
    std::vector<std::vector<std::vector<int32_t>>> holders(first.experts.size());
    bool shared = false;
    for (size_t i = 0; i < holders.size() && expert_parallel; ++i) {
      if (first.experts[i].empty()) continue;
      holders[i].resize(static_cast<size_t>(num_experts));
      for (int t = 0; t < tp; ++t) {
        const std::vector<std::vector<int32_t>>& experts =
            ranks[static_cast<size_t>(RankOf(stage, t))].experts;
        if (i >= experts.size()) continue;  // not a plan MakeShardPlan makes (a manifest's): refused later
        for (int32_t e : experts[i]) {
          if (e < 0 || e >= num_experts) continue;
          holders[i][static_cast<size_t>(e)].push_back(t);
          shared = shared || holders[i][static_cast<size_t>(e)].size() > 1;
        }
      }
    }
    for (int t = 0; t < tp; ++t) {
      ranks[static_cast<size_t>(RankOf(stage, t))].expert_holders =
          shared ? holders : std::vector<std::vector<std::vector<int32_t>>>{};
    }
  }
}

std::string GridText(const ShardPlan& plan) {
  return std::to_string(plan.pp) + " stages x " + std::to_string(plan.tp) +
         (plan.expert_parallel ? " expert-parallel" : " tensor-parallel") + " ranks";
}

std::string ExpertsText(const RankShard& shard) {
  const std::vector<int32_t>* first = nullptr;
  bool same = true;
  size_t fewest = SIZE_MAX, most = 0;
  for (const std::vector<int32_t>& held : shard.experts) {
    if (held.empty()) continue;
    if (first == nullptr) first = &held;
    same = same && held == *first && held.back() - held.front() + 1 == static_cast<int32_t>(held.size());
    fewest = std::min(fewest, held.size());
    most = std::max(most, held.size());
  }
  if (first == nullptr) return "";
  if (same)
    return "experts [" + std::to_string(first->front()) + ", " + std::to_string(first->back() + 1) + ")";
  return "experts placed per layer, " + std::to_string(fewest) +
         (most == fewest ? "" : "-" + std::to_string(most)) + " per layer";
}

std::vector<int64_t> SliceShape(const std::vector<int64_t>& shape, const TensorSlice& slice) {
  std::vector<int64_t> result = shape;
  if (slice.split_dim >= 0) result[static_cast<size_t>(slice.split_dim)] = slice.end - slice.begin;
  return result;
}

Result<ShardPlan> MakeShardPlan(const ModelConfig& c, int pp, int tp,
                                const std::optional<std::vector<int64_t>>& layers_per_stage,
                                bool expert_parallel, const std::optional<ExpertPlacement>& placement) {
  const int64_t n_layers = c.num_hidden_layers;
  const std::string tp_flag = expert_parallel ? "--ep " : "--tp ";
  if (pp < 1) return Error::InvalidArgument("--pp " + std::to_string(pp) + " must be at least 1");
  if (tp < 1) return Error::InvalidArgument(tp_flag + std::to_string(tp) + " must be at least 1");
  if (expert_parallel && c.num_experts == 0) {
    return Error::InvalidArgument(tp_flag + std::to_string(tp) +
                                  " needs a mixture of experts; the model is dense (use --tp)");
  }
  if (pp > n_layers) {
    return Error::InvalidArgument("--pp " + std::to_string(pp) + " exceeds the " + std::to_string(n_layers) +
                                  " layers of the model");
  }
  const std::pair<const char*, int64_t> limits[] = {
      {"attention heads", c.num_attention_heads},
      {"MLP hidden units", c.intermediate_size},
      expert_parallel
          ? std::pair{"experts", c.num_experts}
          : std::pair{"hidden units of an expert", c.num_experts > 0 ? c.expert_intermediate_size : tp},
      {"vocabulary rows", c.vocab_size}};
  for (const auto& [what, count] : limits) {
    if (tp > count) {
      return Error::InvalidArgument(tp_flag + std::to_string(tp) + " exceeds the " + std::to_string(count) +
                                    " " + what + " of the model");
    }
  }
  if (placement && !expert_parallel) {
    return Error::InvalidArgument("an expert placement needs expert parallelism (--ep), not " + tp_flag +
                                  std::to_string(tp));
  }
  if (placement) {
    if (Status fits = CheckExpertPlacement(c, tp, *placement); !fits) return fits.error();
  }
  const std::optional<ExpertPlacement> placed =
      expert_parallel ? std::optional(placement.value_or(ContiguousExperts(c, tp))) : std::nullopt;
  std::vector<int64_t> sizes;
  if (layers_per_stage) {
    if (Status valid = CheckLayers(*layers_per_stage, pp, n_layers); !valid) return valid.error();
    sizes = *layers_per_stage;
  } else {
    sizes = ComputeBalancedLayersPerStage(c, pp);
  }

  const bool tied = c.tie_word_embeddings;
  const int64_t heads_per_kv = c.num_attention_heads / c.num_key_value_heads;
  ShardPlan plan;
  plan.pp = pp;
  plan.tp = tp;
  plan.expert_parallel = expert_parallel;
  plan.ranks.resize(static_cast<size_t>(pp * tp));
  for (int t = 0; t < tp; ++t) {
    const RowRange part = EvenPart(c.vocab_size, tp, t);
    const std::vector<int64_t> rows = ComputeBalancedClassifierRows(c, sizes, part.size(), tp);
    int64_t first_layer = 0;
    for (int stage = 0; stage < pp; ++stage) {
      RankShard& shard = plan.ranks[static_cast<size_t>(plan.RankOf(stage, t))];
      shard.rank = plan.RankOf(stage, t);
      shard.stage = stage;
      shard.tp_index = t;
      shard.layers = {first_layer, first_layer + sizes[static_cast<size_t>(stage)]};
      first_layer = shard.layers.end;
      shard.heads = EvenPart(c.num_attention_heads, tp, t);
      shard.kv_heads = {shard.heads.begin / heads_per_kv,
                        (shard.heads.end + heads_per_kv - 1) / heads_per_kv};
      shard.hidden_units = EvenPart(c.intermediate_size, tp, t);
      for (int64_t layer = shard.layers.begin; layer < shard.layers.end; ++layer) {
        std::vector<int32_t> held = AllExperts(c, layer);
        if (placed) {
          const std::vector<int>& owner = placed->owner[static_cast<size_t>(layer)];
          const std::vector<int32_t>* copies =
              placed->copies.empty() || owner.empty()
                  ? nullptr
                  : &placed->copies[static_cast<size_t>(layer)][static_cast<size_t>(t)];
          std::erase_if(held, [&](int32_t e) {
            return owner[static_cast<size_t>(e)] != t &&
                   (copies == nullptr || !std::binary_search(copies->begin(), copies->end(), e));
          });
        }
        shard.experts.push_back(std::move(held));
      }
      const RowRange in_part = ClassifierRowsOfStage(rows, stage);
      shard.classifier_rows = {part.begin + in_part.begin, part.begin + in_part.end};
      if (stage == 0) shard.embedding_rows = {0, c.vocab_size};
      shard.has_final_norm = stage == pp - 1;

      if (stage == 0) shard.tensors.push_back({kEmbedTokensName, -1, 0, 0});
      for (int64_t layer = shard.layers.begin; layer < shard.layers.end; ++layer) {
        for (TensorSlice& slice : LayerSlices(c, layer, shard, tp, expert_parallel))
          shard.tensors.push_back(std::move(slice));
      }
      if (shard.has_final_norm) shard.tensors.push_back({kFinalNormName, -1, 0, 0});
      if (shard.classifier_rows.size() > 0 && !shard.ClassifierRowsInEmbedding(tied)) {
        shard.tensors.push_back(
            SliceOf(tied ? kEmbedTokensName : kLmHeadName, 0, shard.classifier_rows, c.vocab_size));
      }
    }
  }
  plan.SetExpertHolders(c.num_experts);
  return plan;
}

}  // namespace inferno
