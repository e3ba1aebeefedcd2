// Routing statistics: how many positions a mixture of experts' router sent
// to each expert of each sparse layer — the histogram `infer
// --routing-stats FILE` writes and `shard`/`infer`/`serve --experts-by-load
// FILE` read to place experts (loader/expert_placement.h). docs/engine.md
// describes the file; this header is its single definition in code:
//
//   {"format": "inferno-routing-stats", "version": 1,
//    "num_hidden_layers": 2, "num_experts": 4, "num_experts_per_tok": 2,
//    "counts": [[12, 3, 0, 9], [6, 6, 6, 6]]}
//
// counts[layer][e]: positions routed to expert e of that layer (each
// position counts once in each of its num_experts_per_tok experts); a dense
// layer's entry is []. The counts are what the router computes anyway
// (engine/moe_feed_forward.h): prompt and generated positions alike.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "loader/shard_plan.h"
#include "model/model_config.h"

namespace inferno {

inline constexpr char kRoutingStatsFormat[] = "inferno-routing-stats";
inline constexpr int kRoutingStatsVersion = 1;

// (num_hidden_layers, num_experts) counts; [] for a dense layer.
using RoutingCounts = std::vector<std::vector<int64_t>>;

std::string RoutingStatsToJson(const ModelConfig& config, const RoutingCounts& counts);
// Parses a routing-stats document and checks it fits `config`, failing with
// one line naming `source` and what differs: "stats.json: counts 48 layers
// but the model has 2", "stats.json: layer 1 counts 64 experts but the
// model has 128", "stats.json: layer 0 is dense in the model but has
// counts", a negative count, another format or version.
Result<RoutingCounts> ParseRoutingStats(const std::string& text, const std::string& source,
                                        const ModelConfig& config);
// Reads and parses `path` (ParseRoutingStats).
Result<RoutingCounts> ReadRoutingStats(const std::string& path, const ModelConfig& config);

// The placement a job's --experts-by-load and --expert-replicas ask for, of
// a model of `config` on stages of `tp` ranks: experts placed by `counts`
// (the stats file's, ReadRoutingStats; null without the flag) with
// PlaceExpertsByLoad, or in contiguous runs, plus `replicas` copies per rank
// (AddExpertReplicas, by `counts` if given); nullopt with neither
// (MakeShardPlan's default), or when tp is outside [1, num_experts]
// (MakeShardPlan refuses the grid). Fails as AddExpertReplicas does.
Result<std::optional<ExpertPlacement>> PlaceJobExperts(const RoutingCounts* counts, int replicas,
                                                       const ModelConfig& config, int tp);

// One rank's routing histogram (TransformerStage::RoutingCounts: its layers
// × num_experts, little-endian int64), as ranks send it to be gathered.
std::vector<std::byte> EncodeStageCounts(std::span<const int64_t> counts);
// The model's histogram from every rank's EncodeStageCounts (stage_counts[r]
// from rank r of `plan`; ranks of a stage count alike, so index 0's are
// taken; empty bytes: a stage without sparse layers). Fails naming the rank when its bytes do not fit its
// layers.
Result<RoutingCounts> GatherRoutingCounts(const ModelConfig& config, const ShardPlan& plan,
                                          const std::vector<std::vector<std::byte>>& stage_counts);

}  // namespace inferno
