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

Result<ExpertPlacement> AddExpertReplicas(int tp, ExpertPlacement placement, int replicas,
                                          const std::vector<std::vector<int64_t>>* counts) {
  if (replicas < 0) {
    return Error::InvalidArgument("--expert-replicas " + std::to_string(replicas) + " must be at least 0");
  }
  CHECK(placement.copies.empty()) << "the placement has copies already";
  CHECK(counts == nullptr || counts->size() == placement.owner.size());
  if (replicas == 0) return placement;
  placement.copies.resize(placement.owner.size());
  for (size_t layer = 0; layer < placement.owner.size(); ++layer) {
    const std::vector<int>& owner = placement.owner[layer];
    std::vector<std::vector<int32_t>>& copies = placement.copies[layer];
    copies.resize(owner.empty() ? 0 : static_cast<size_t>(tp));
    if (owner.empty()) continue;
    const size_t n = owner.size();
    // holds[t * n + e]: whether index t holds expert e; holders[e]: how many do.
    std::vector<char> holds(static_cast<size_t>(tp) * n, 0);
    std::vector<int64_t> holders(n, 1);
    for (size_t e = 0; e < n; ++e) holds[static_cast<size_t>(owner[e]) * n + e] = 1;
    for (int t = 0; t < tp; ++t) {
      const int64_t others = std::count_if(owner.begin(), owner.end(), [&](int o) { return o != t; });
      if (others < replicas) {
        return Error::InvalidArgument("--expert-replicas " + std::to_string(replicas) + " exceeds the " +
                                      std::to_string(others) + " experts of layer " + std::to_string(layer) +
                                      " that rank index " + std::to_string(t) + " does not own");
      }
    }
    const auto count = [&](size_t e) { return counts == nullptr ? int64_t{1} : (*counts)[layer][e]; };
    for (int round = 0; round < replicas; ++round) {
      for (int t = 0; t < tp; ++t) {
        const char* held = holds.data() + static_cast<size_t>(t) * n;
        size_t best = n;
        for (size_t e = 0; e < n; ++e) {
          // count[e] / holders[e] > count[best] / holders[best], in integers.
          if (!held[e] && (best == n || count(e) * holders[best] > count(best) * holders[e])) best = e;
        }
        holds[static_cast<size_t>(t) * n + best] = 1;
        ++holders[best];
        copies[static_cast<size_t>(t)].push_back(static_cast<int32_t>(best));
      }
    }
    for (std::vector<int32_t>& list : copies) std::sort(list.begin(), list.end());
  }
  return placement;
}

Status CheckExpertPlacement(const ModelConfig& config, int tp, const ExpertPlacement& placement) {
  if (static_cast<int64_t>(placement.owner.size()) != config.num_hidden_layers) {
    return Error::InvalidArgument("the expert placement has " + std::to_string(placement.owner.size()) +
                                  " layers but the model has " + std::to_string(config.num_hidden_layers));
  }
  if (!placement.copies.empty() && placement.copies.size() != placement.owner.size()) {
    return Error::InvalidArgument("the expert placement lists the copies of " +
                                  std::to_string(placement.copies.size()) + " layers but the model has " +
                                  std::to_string(config.num_hidden_layers));
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
    if (!placement.copies.empty()) {
      const std::vector<std::vector<int32_t>>& copies = placement.copies[static_cast<size_t>(layer)];
      const size_t lists = expected == 0 ? 0 : static_cast<size_t>(tp);
      if (copies.size() != lists) {
        return Error::InvalidArgument(where + " lists the copies of " + std::to_string(copies.size()) +
                                      " ranks but the stage has " + std::to_string(lists));
      }
      for (int t = 0; t < static_cast<int>(copies.size()); ++t) {
        const std::vector<int32_t>& copied = copies[static_cast<size_t>(t)];
        for (size_t i = 0; i < copied.size(); ++i) {
          const int32_t e = copied[i];
          const std::string copy =
              " has rank index " + std::to_string(t) + " copy expert " + std::to_string(e);
          if (e < 0 || e >= expected)
            return Error::InvalidArgument(where + copy + ", which it does not have");
          if (i > 0 && e <= copied[i - 1])
            return Error::InvalidArgument(where + copy + " twice or out of order");
          if (owner[static_cast<size_t>(e)] == t)
            return Error::InvalidArgument(where + copy + ", which it owns");
          ++held[static_cast<size_t>(t)];
        }
      }
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
