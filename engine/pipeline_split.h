// PipelineSplit: how many layers each pipeline stage should run so that the
// stages take about equal time per token — the compute-balanced alternative
// to the loader's byte-balanced default. Per token a layer costs its
// multiply-adds (its weights' elements); the last stage also pays for the
// classifier (vocab × dim), the first stage nothing for the embedding lookup.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "loader/model_config.h"

namespace inferno {

// Layers per stage, in stage order (stage 0 first), each >= 1, summing to
// the layer count, minimizing the most expensive stage, then the unevenness
// of the others. Precondition: 1 <= stages <= num_hidden_layers.
std::vector<int64_t> ComputeBalancedLayersPerStage(const ModelConfig& config, int stages);

}  // namespace inferno
