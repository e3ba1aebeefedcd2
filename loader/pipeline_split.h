// PipelineSplit: how much of the model each pipeline stage computes per token
// so that the stages take about equal time; ShardPlan (shard_plan.h) is built
// from it.
//
// A stage runs a contiguous range of layers and the logits of a contiguous
// slice of the classifier's rows (vocabulary ids): the classifier (vocab ×
// dim) is the biggest single matrix of a small model, and split by rows every
// stage can take a share of it, so the layers need not be cut unevenly to
// make room for it on one stage. Per token a layer costs its multiply-adds
// (its weights' elements), a classifier row `dim`; the embedding lookup is
// free. Slices follow stage order: stage 0 holds the first rows, the last
// stage the last ones.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/model_config.h"

namespace inferno {

// Rows [begin, end) of the classifier: the vocabulary ids whose logits a
// stage computes.
struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const RowRange&) const = default;
};

// Part `index` of `total` items divided into `parts` as evenly as possible,
// earlier parts taking the remainder: layers over stages, heads, hidden
// units and classifier rows over tensor-parallel ranks, experts over
// expert-parallel ones. Precondition: 0 <= index < parts.
RowRange EvenPart(int64_t total, int parts, int index);

// Layers per stage, in stage order (stage 0 first), each >= 1, summing to
// the layer count, as even as possible (earlier stages take the remainder):
// with the classifier spread by ComputeBalancedClassifierRows that minimizes
// the most expensive stage. Precondition: 1 <= stages <= num_hidden_layers.
std::vector<int64_t> ComputeBalancedLayersPerStage(const ModelConfig& config, int stages);

// Classifier rows per stage, in stage order, summing to `rows`, for stages
// running `layers_per_stage` layers each split over `tp` tensor-parallel
// ranks (a rank computes 1/tp of each of its layers): fills the cheapest
// stages first, so that every stage with rows ends at about the same cost
// and no stage with rows costs more than one without (a stage whose layers
// alone cost more than an even share gets none). Ties in rounding go to the
// earlier stage. Preconditions: every entry >= 0; rows >= 0; tp >= 1.
std::vector<int64_t> ComputeBalancedClassifierRows(const ModelConfig& config,
                                                   std::span<const int64_t> layers_per_stage, int64_t rows,
                                                   int tp);

// The row range of `stage` when the stages hold `rows_per_stage` rows each,
// in stage order. Precondition: 0 <= stage < rows_per_stage.size().
RowRange ClassifierRowsOfStage(std::span<const int64_t> rows_per_stage, int stage);

}  // namespace inferno
