// ExpertPlacement: under expert parallelism (--ep), which rank of a stage
// holds each expert of each sparse layer — the contiguous default, or one
// computed from a routing histogram (loader/routing_stats.h) so that the
// busiest rank's expected share of a token's experts is as small as a greedy
// placement finds — and, with --expert-replicas, copies of other ranks'
// experts each rank holds as well (redundant experts, as DeepSeek-V3 does),
// so that a token's experts held twice can run on the less busy holder
// (engine/moe_feed_forward.h). MakeShardPlan (loader/shard_plan.h) turns it
// into each rank's expert lists; nothing else places experts.
//
// Thread-safety: a plain value type and pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "model/model_config.h"

namespace inferno {

struct ExpertPlacement {
  // owner[layer][e]: the tensor-parallel index in [0, tp) holding expert e of
  // sparse layer `layer`; empty for a dense layer. num_hidden_layers entries.
  std::vector<std::vector<int>> owner;
  // copies[layer][t]: the experts of sparse layer `layer` that index t holds
  // besides those it owns, increasing; empty (no layers) without replicas,
  // else num_hidden_layers entries of tp lists (empty for a dense layer).
  std::vector<std::vector<std::vector<int32_t>>> copies = {};
  bool operator==(const ExpertPlacement&) const = default;
};

// Experts divided into tp contiguous runs as evenly as possible, earlier
// indices taking the remainder (128 over 3 ranks: 43, 43, 42), every layer
// alike. Precondition: 1 <= tp <= config.num_experts.
ExpertPlacement ContiguousExperts(const ModelConfig& config, int tp);

// Each sparse layer's experts placed on tp ranks by `counts` (counts[layer]
// [e]: positions routed to expert e of that layer; empty for dense layers)
// to make the busiest rank's routed count small: experts by decreasing
// count (ties to the lower index) each go to the rank with the smallest
// count so far (ties to the rank holding fewer experts, then the lower
// index) — LPT, within 4/3 of the optimum; every rank gets at least one
// expert. Preconditions: counts matches config (CheckRoutingStats), 1 <= tp
// <= config.num_experts.
ExpertPlacement PlaceExpertsByLoad(const ModelConfig& config, int tp,
                                   const std::vector<std::vector<int64_t>>& counts);

// `placement` (without copies) with `replicas` copies added per rank in
// every sparse layer, placed one at a time, the ranks taking turns (index 0,
// 1, ..., tp - 1, then again): each copy goes to the expert the rank does not
// hold with the largest count per holder so far, counts[layer][e] / (its
// holders), ties to the lower index — the rule of DeepSeek's load balancer
// (EPLB), which gives the next replica to the expert with the most load per
// replica: the hottest experts are copied first, and an expert already
// copied gives way to one as hot whose load is not yet shared. Without
// `counts` every expert counts 1, which spreads the copies over distinct
// experts, the lowest indices first. Fails with a one-line error naming the
// flag when replicas < 0, or when a rank of some layer holds fewer than
// `replicas` experts it could copy (the others' experts: "--expert-replicas
// 70 exceeds the 64 experts rank index 0 does not own"); replicas == 0 gives
// `placement` unchanged. Preconditions: `placement` passes
// CheckExpertPlacement and has no copies; counts, if given, matches the
// model (CheckRoutingStats).
Result<ExpertPlacement> AddExpertReplicas(int tp, ExpertPlacement placement, int replicas,
                                          const std::vector<std::vector<int64_t>>* counts = nullptr);

// Fails with a one-line error naming the layer and expert when `placement`
// does not fit a model of `config` on `tp` ranks per stage: a layer count
// other than the model's, a sparse layer without num_experts owners or a
// dense one with any, an owner outside [0, tp), or a rank holding no expert
// of a sparse layer; with copies: not one list per rank of each layer (none
// for a dense one), a copied expert outside [0, num_experts), copied twice
// or copied by its owner.
Status CheckExpertPlacement(const ModelConfig& config, int tp, const ExpertPlacement& placement);

// The largest, over ranks, of a rank's routed count in layer `layer` under
// `placement` (its owners: copies are not counted), divided by the total
// routed count of the layer: the expected share of a token's expert work the
// busiest rank does. 0 when nothing was routed.
double BusiestRankShare(const ExpertPlacement& placement, int tp,
                        const std::vector<std::vector<int64_t>>& counts, int64_t layer);

}  // namespace inferno
