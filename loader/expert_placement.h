// ExpertPlacement: under expert parallelism (--ep), which rank of a stage
// holds each expert of each sparse layer — the contiguous default, or one
// computed from a routing histogram (loader/routing_stats.h) so that the
// busiest rank's expected share of a token's experts is as small as a greedy
// placement finds. MakeShardPlan (loader/shard_plan.h) turns it into each
// rank's expert lists; nothing else places experts.
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

// Fails with a one-line error naming the layer and expert when `placement`
// does not fit a model of `config` on `tp` ranks per stage: a layer count
// other than the model's, a sparse layer without num_experts owners or a
// dense one with any, an owner outside [0, tp), or a rank holding no expert
// of a sparse layer.
Status CheckExpertPlacement(const ModelConfig& config, int tp, const ExpertPlacement& placement);

// The largest, over ranks, of a rank's routed count in layer `layer` under
// `placement`, divided by the total routed count of the layer: the expected
// share of a token's expert work the busiest rank does. 0 when nothing was
// routed.
double BusiestRankShare(const ExpertPlacement& placement, int tp,
                        const std::vector<std::vector<int64_t>>& counts, int64_t layer);

}  // namespace inferno
