#include "runtime/one_stage_loop.h"

#include <algorithm>

namespace inferno {

OneStageLoop::OneStageLoop(Scheduler& scheduler, StageWorker& worker, TensorParallelAgreement& agreement)
    : scheduler_(scheduler),
      worker_(worker),
      agreement_(agreement),
      next_(static_cast<size_t>(worker.stage().num_slots())) {}

Status OneStageLoop::Run() {
  const int64_t dim = worker_.dim();
  while (true) {
    Result<StepDecisions> decisions = scheduler_.Decide();
    if (!decisions) return decisions.error();
    Status admitted =
        scheduler_.Admit(*decisions, [&](int slot, std::span<const int32_t> prompt, const PrefixPlan& plan) {
          if (Status started = worker_.Start(slot, plan); !started) return started;
          std::span<const float> last;
          Status prefilled = worker_.Prefill(slot, prompt, [&](int64_t, std::span<const float> x) {
            last = x.last(dim);
            return Status();
          });
          if (!prefilled) return prefilled;
          const int slots[] = {slot};
          return Classify(slots, last);
        });
    if (!admitted) return admitted;
    if (decisions->tick_due) {
      Result<std::vector<double>> times = agreement_.StageTimes();
      if (!times) return times.error();
      scheduler_.ReportRankTimes(*times);
      scheduler_.RestartTickClock();
    }
    if (scheduler_.running() == 0 && decisions->exhausted) return {};
    if (Status round = RunRound(); !round) return round;
  }
}

Status OneStageLoop::RunRound() {
  std::vector<int> round;
  for (size_t slot = 0; slot < next_.size(); ++slot) {
    if (scheduler_.slot(static_cast<int>(slot)).busy) round.push_back(static_cast<int>(slot));
  }
  const size_t max_group = static_cast<size_t>(worker_.max_group());
  for (size_t begin = 0; begin < round.size(); begin += max_group) {
    const std::span<const int> group =
        std::span<const int>(round).subspan(begin, std::min(max_group, round.size() - begin));
    tokens_.clear();
    batch_.clear();
    for (int slot : group) {
      tokens_.push_back(next_[slot]);
      batch_.push_back(SlotPositions{slot, worker_.position(slot), 1});
    }
    Result<std::span<float>> x = worker_.EmbedAndForward(tokens_, batch_);
    if (!x) return x.error();
    if (Status sampled = Classify(group, *x); !sampled) return sampled;
  }
  return {};
}

Status OneStageLoop::Classify(std::span<const int> slots, std::span<const float> hidden) {
  const std::span<const int> classified =
      scheduler_.NormForClassifier(slots, hidden, worker_.normed(static_cast<int64_t>(slots.size())));
  if (classified.empty()) return {};
  scheduler_.CountSamplingStep();
  const std::span<float> logits = worker_.ClassifyOwnRows(static_cast<int64_t>(classified.size()),
                                                          StepLabel(classified.size(), classified[0]));
  const int64_t rows = worker_.stage().classifier_rows().size();
  for (size_t i = 0; i < classified.size(); ++i) {
    const int slot = classified[i];
    const Result<int32_t> token = scheduler_.SampleNext(slot, logits.subspan(i * rows, rows));
    if (!token) return token.error();
    next_[slot] = *token;
  }
  return {};
}

}  // namespace inferno
