#include "loader/pipeline_split.h"

#include <algorithm>
#include <numeric>

#include <glog/logging.h>

namespace inferno {
namespace {

// Multiply-adds of one layer for one token.
int64_t LayerCost(const ModelConfig& config) {
  const int64_t dim = config.hidden_size;
  return dim * (dim + 2 * config.kv_dim()) + dim * dim + 3 * dim * config.intermediate_size;
}

}  // namespace

RowRange EvenPart(int64_t total, int parts, int index) {
  CHECK(index >= 0 && index < parts) << "part " << index << " of " << parts;
  const int64_t base = total / parts;
  const int64_t extra = total % parts;
  const int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

std::vector<int64_t> ComputeBalancedLayersPerStage(const ModelConfig& config, int stages) {
  const int64_t layers = config.num_hidden_layers;
  CHECK(stages >= 1 && stages <= layers) << stages << " stages for " << layers << " layers";
  std::vector<int64_t> split(stages);
  for (int s = 0; s < stages; ++s) split[s] = EvenPart(layers, stages, s).size();
  return split;
}

std::vector<int64_t> ComputeBalancedClassifierRows(const ModelConfig& config,
                                                   std::span<const int64_t> layers_per_stage,
                                                   int64_t rows_total, int tp) {
  const int stages = static_cast<int>(layers_per_stage.size());
  CHECK_GE(stages, 1);
  CHECK_GE(tp, 1);
  CHECK_GE(rows_total, 0);
  // Costs in units of 1/tp multiply-adds: a layer costs LayerCost / tp on
  // each rank, a row `dim`.
  const int64_t row_cost = config.hidden_size * tp;
  const int64_t vocab = rows_total;
  std::vector<int64_t> cost(stages);
  for (int s = 0; s < stages; ++s) {
    CHECK_GE(layers_per_stage[s], 0);
    cost[s] = layers_per_stage[s] * LayerCost(config);
  }
  // Stages by cost, cheapest first (stage order among equals).
  std::vector<int> order(stages);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cost[a] < cost[b]; });
  // Water-filling: the k cheapest stages take rows up to a common level
  // (level - cost) / row_cost; the right k is the largest whose level does
  // not fall below its most expensive member's cost.
  int takers = 1;
  int64_t cost_sum = cost[order[0]];
  for (int k = 2; k <= stages; ++k) {
    const int64_t next_sum = cost_sum + cost[order[k - 1]];
    // level_k = (vocab * row_cost + next_sum) / k; taker k joins when level_k > its cost.
    if (vocab * row_cost + next_sum <= cost[order[k - 1]] * k) break;
    takers = k;
    cost_sum = next_sum;
  }
  const double level = static_cast<double>(vocab * row_cost + cost_sum) / takers;
  std::vector<int64_t> rows(stages, 0);
  int64_t assigned = 0;
  for (int i = 0; i < takers; ++i) {
    const int s = order[i];
    rows[s] = std::max<int64_t>(0, static_cast<int64_t>((level - static_cast<double>(cost[s])) / row_cost));
    assigned += rows[s];
  }
  CHECK_LE(assigned, vocab);
  // Rounding leftovers: one row at a time to the stage that is cheapest with
  // it (the earlier stage on ties).
  while (assigned < vocab) {
    int cheapest = order[0];
    for (int i = 0; i < takers; ++i) {
      const int s = order[i];
      const int64_t with = cost[s] + (rows[s] + 1) * row_cost;
      const int64_t best = cost[cheapest] + (rows[cheapest] + 1) * row_cost;
      if (with < best || (with == best && s < cheapest)) cheapest = s;
    }
    ++rows[cheapest];
    ++assigned;
  }
  return rows;
}

RowRange ClassifierRowsOfStage(std::span<const int64_t> rows_per_stage, int stage) {
  CHECK(stage >= 0 && stage < static_cast<int>(rows_per_stage.size())) << "stage " << stage;
  const int64_t begin = std::accumulate(rows_per_stage.begin(), rows_per_stage.begin() + stage, int64_t{0});
  return {begin, begin + rows_per_stage[stage]};
}

}  // namespace inferno
