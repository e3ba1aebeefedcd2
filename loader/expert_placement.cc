#include "loader/expert_placement.h"

#include <algorithm>
#include <numeric>

#include <glog/logging.h>

#include "loader/pipeline_split.h"

namespace inferno {

ExpertPlacement ContiguousExperts(const ModelConfig& config, int tp) {
  CHECK(tp >= 1 && tp <= config.num_experts) << tp << " ranks for " << config.num_experts << " experts";
  ExpertPlacement placement;
  placement.owner.resize(static_cast<size_t>(config.num_hidden_layers));
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    if (!config.IsSparseLayer(layer)) continue;
    std::vector<int>& owner = placement.owner[static_cast<size_t>(layer)];
    for (int t = 0; t < tp; ++t) {
      owner.insert(owner.end(), static_cast<size_t>(EvenPart(config.num_experts, tp, t).size()), t);
    }
  }
  return placement;
}

ExpertPlacement PlaceExpertsByLoad(const ModelConfig& config, int tp,
                                   const std::vector<std::vector<int64_t>>& counts) {
  CHECK(tp >= 1 && tp <= config.num_experts) << tp << " ranks for " << config.num_experts << " experts";
  CHECK_EQ(static_cast<int64_t>(counts.size()), config.num_hidden_layers);
  ExpertPlacement placement;
  placement.owner.resize(counts.size());
  for (size_t layer = 0; layer < counts.size(); ++layer) {
    const std::vector<int64_t>& count = counts[layer];
    if (count.empty()) continue;
    std::vector<int> order(count.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return count[a] > count[b]; });
    std::vector<int64_t> load(static_cast<size_t>(tp), 0), held(static_cast<size_t>(tp), 0);
    std::vector<int>& owner = placement.owner[layer];
    owner.assign(count.size(), 0);
    for (int e : order) {
      int best = 0;
      for (int t = 1; t < tp; ++t) {
        if (load[t] < load[best] || (load[t] == load[best] && held[t] < held[best])) best = t;
      }
      owner[static_cast<size_t>(e)] = best;
      load[static_cast<size_t>(best)] += count[static_cast<size_t>(e)];
      ++held[static_cast<size_t>(best)];
    }
  }
  return placement;
}

Status CheckExpertPlacement(const ModelConfig& config, int tp, const ExpertPlacement& placement) {
  if (static_cast<int64_t>(placement.owner.size()) != config.num_hidden_layers) {
    return Error::InvalidArgument("the expert placement has " + std::to_string(placement.owner.size()) +
                                  " layers but the model has " + std::to_string(config.num_hidden_layers));
  }
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const std::vector<int>& owner = placement.owner[static_cast<size_t>(layer)];
    const std::string where = "the expert placement's layer " + std::to_string(layer);
    const int64_t expected = config.IsSparseLayer(layer) ? config.num_experts : 0;
    if (static_cast<int64_t>(owner.size()) != expected) {
      return Error::InvalidArgument(
          where + " places " + std::to_string(owner.size()) + " experts but the " +
          (expected == 0 ? "layer is dense" : "model has " + std::to_string(expected)));
    }
    std::vector<int64_t> held(static_cast<size_t>(tp), 0);
    for (size_t e = 0; e < owner.size(); ++e) {
      if (owner[e] < 0 || owner[e] >= tp) {
        return Error::InvalidArgument(where + " puts expert " + std::to_string(e) + " on rank index " +
                                      std::to_string(owner[e]) + ", outside the stage's " +
                                      std::to_string(tp));
      }
      ++held[static_cast<size_t>(owner[e])];
    }
    for (int t = 0; t < tp && expected > 0; ++t) {
      if (held[static_cast<size_t>(t)] == 0) {
        return Error::InvalidArgument(where + " gives rank index " + std::to_string(t) + " no expert");
      }
    }
  }
  return {};
}

double BusiestRankShare(const ExpertPlacement& placement, int tp,
                        const std::vector<std::vector<int64_t>>& counts, int64_t layer) {
  const std::vector<int>& owner = placement.owner[static_cast<size_t>(layer)];
  const std::vector<int64_t>& count = counts[static_cast<size_t>(layer)];
  CHECK_EQ(owner.size(), count.size()) << "layer " << layer;
  std::vector<int64_t> load(static_cast<size_t>(tp), 0);
  for (size_t e = 0; e < count.size(); ++e) load[static_cast<size_t>(owner[e])] += count[e];
  const int64_t total = std::accumulate(load.begin(), load.end(), int64_t{0});
  return total == 0 ? 0.0 : static_cast<double>(*std::max_element(load.begin(), load.end())) / total;
}

}  // namespace inferno
