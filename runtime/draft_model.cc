#include "runtime/draft_model.h"

#include <algorithm>
#include <string>

#include <glog/logging.h>

namespace inferno {

Status CheckDraftVocabulary(const ModelConfig& draft, const ModelConfig& target) {
  if (draft.vocab_size == target.vocab_size) return {};
  return Error::InvalidArgument("--draft: the draft model's vocabulary has " +
                                std::to_string(draft.vocab_size) + " tokens, the model's " +
                                std::to_string(target.vocab_size) +
                                "; a draft must share the model's vocabulary");
}

DraftModel::DraftModel(TransformerStage& stage, Timeline& timeline)
    : stage_(stage),
      worker_(stage, timeline),
      run_(static_cast<size_t>(stage.num_slots())),
      samplers_(static_cast<size_t>(stage.num_slots())) {
  CHECK(stage.is_first() && stage.is_last() && stage.tensor_parallel() == nullptr)
      << "a draft model runs whole on one rank";
  CHECK_EQ(static_cast<int64_t>(stage.classifier_rows().size()), stage.config().vocab_size);
}

Status DraftModel::Start(int slot, std::span<const int32_t> prompt, const SamplingOptions& sampling) {
  SamplingOptions proposing{.temperature = sampling.temperature,
                            .top_k = sampling.top_k,
                            .top_p = sampling.top_p,
                            // Its own stream: the target's sampler draws from the sequence's seed.
                            .seed = sampling.seed ^ 0xD1B54A32D192ED03ull};
  samplers_[slot].emplace(proposing, static_cast<int32_t>(config().vocab_size), std::span<const int32_t>());
  worker_.Restart(slot);
  run_[slot].clear();
  const std::span<const int32_t> head = prompt.first(prompt.size() - 1);
  if (head.empty() || static_cast<int64_t>(prompt.size()) > stage_.context_length()) return {};
  if (Status done = worker_.Prefill(slot, head, [](int64_t, std::span<const float>) { return Status(); });
      !done) {
    return done;
  }
  run_[slot].assign(head.begin(), head.end());
  return {};
}

std::span<float> DraftModel::Logits(int slot, std::span<const float> hidden) {
  const std::span<float> normed = worker_.normed(1);
  stage_.FinalNorm(hidden, normed);
  return worker_.ClassifyOwnRows(1, slot);
}

Status DraftModel::Draft(int slot, std::span<const int32_t> tokens, int64_t k, std::vector<int32_t>& draft,
                         std::vector<float>& probs) {
  draft.clear();
  probs.clear();
  const int64_t n = static_cast<int64_t>(tokens.size());
  // Positions: the tokens, then all drafted tokens but the last.
  k = std::min(k, stage_.context_length() - n + 1);
  if (k <= 0 || n == 0) return {};
  std::vector<int32_t>& run = run_[slot];
  const int64_t held =
      std::mismatch(run.begin(), run.end(), tokens.begin(), tokens.end()).first - run.begin();
  const int64_t keep = std::min(held, n - 1);  // the last token runs for its logits
  worker_.CutBack(slot, keep);
  run.assign(tokens.begin(), tokens.end());
  const int64_t dim = worker_.dim();
  std::span<const float> last;
  if (Status done = worker_.Prefill(slot, tokens,
                                    [&](int64_t, std::span<const float> x) {
                                      last = x.last(dim);
                                      return Status();
                                    });
      !done) {
    return done;
  }
  Sampler& sampler = *samplers_[slot];
  const bool sampling = sampler.options().temperature > 0.0f;
  const size_t vocab = static_cast<size_t>(config().vocab_size);
  for (int64_t i = 0; i < k; ++i) {
    const std::span<float> logits = Logits(slot, last);
    const int32_t token = sampler.Propose(logits);
    draft.push_back(token);
    if (sampling) probs.insert(probs.end(), logits.begin(), logits.begin() + static_cast<ptrdiff_t>(vocab));
    if (i + 1 == k) break;
    const SlotPositions part{slot, worker_.position(slot), 1};
    Result<std::span<float>> x = worker_.EmbedAndForward(std::span(&draft.back(), 1), std::span(&part, 1));
    if (!x) return x.error();
    last = *x;
    run.push_back(token);
  }
  return {};
}

}  // namespace inferno
