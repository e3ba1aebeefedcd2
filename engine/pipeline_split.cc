#include "engine/pipeline_split.h"

#include <algorithm>
#include <limits>

#include <glog/logging.h>

namespace inferno {

std::vector<int64_t> ComputeBalancedLayersPerStage(const ModelConfig& config, int stages) {
  const int64_t layers = config.num_hidden_layers;
  CHECK(stages >= 1 && stages <= layers) << stages << " stages for " << layers << " layers";
  const int64_t dim = config.hidden_size;
  const int64_t layer_cost = dim * (dim + 2 * config.kv_dim()) + dim * dim + 3 * dim * config.intermediate_size;
  const int64_t head_cost = config.vocab_size * dim;
  // The last stage runs some layers plus the head; the other stages share
  // the rest as evenly as possible (earlier stages take the remainder). Try
  // every count for the last stage; keep the smallest maximum stage cost,
  // then the smallest sum of squared stage costs (the most even split).
  const int others = stages - 1;
  std::vector<int64_t> best;
  double best_max = std::numeric_limits<double>::infinity();
  double best_squares = best_max;
  for (int64_t last = others == 0 ? layers : 1; last <= layers - others; ++last) {
    std::vector<int64_t> split(stages, 0);
    split[stages - 1] = last;
    const int64_t rest = layers - last;
    for (int s = 0; s < others; ++s) split[s] = rest / others + (s < rest % others ? 1 : 0);
    double max_cost = 0;
    double squares = 0;
    for (int s = 0; s < stages; ++s) {
      const double cost = static_cast<double>(split[s] * layer_cost + (s == stages - 1 ? head_cost : 0));
      max_cost = std::max(max_cost, cost);
      squares += cost * cost;
    }
    if (max_cost < best_max || (max_cost == best_max && squares < best_squares)) {
      best_max = max_cost;
      best_squares = squares;
      best = split;
    }
  }
  return best;
}

}  // namespace inferno
