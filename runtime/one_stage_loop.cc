#include "runtime/one_stage_loop.h"

#include <algorithm>

namespace inferno {

OneStageLoop::OneStageLoop(Scheduler& scheduler, StageWorker& worker, TensorParallelAgreement& agreement)
    : scheduler_(scheduler),
      worker_(worker),
      agreement_(agreement),
      next_(static_cast<size_t>(worker.stage().num_slots())),
      rows_(static_cast<size_t>(worker.stage().num_slots())) {}

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
  const int64_t max_rows = worker_.max_classified();
  for (size_t begin = 0; begin < round.size(); begin += group_.size()) {
    tokens_.clear();
    batch_.clear();
    group_.clear();
    group_rows_.clear();
    for (size_t i = begin; i < round.size() && group_.size() < max_group; ++i) {
      const int slot = round[i];
      const int64_t room = max_rows - static_cast<int64_t>(tokens_.size());
      if (room < 1) break;
      const Result<std::span<const int32_t>> draft = scheduler_.Draft(slot, room);
      if (!draft) return draft.error();
      tokens_.push_back(next_[slot]);
      tokens_.insert(tokens_.end(), draft->begin(), draft->end());
      rows_[slot] = 1 + static_cast<int64_t>(draft->size());
      batch_.push_back(SlotPositions{slot, worker_.position(slot), rows_[slot]});
      group_.push_back(slot);
      group_rows_.push_back(rows_[slot]);
    }
    Result<std::span<float>> x = worker_.EmbedAndForward(tokens_, batch_);
    if (!x) return x.error();
    if (Status sampled = Classify(group_, *x, group_rows_); !sampled) return sampled;
  }
  return {};
}

Status OneStageLoop::Classify(std::span<const int> slots, std::span<const float> hidden,
                              std::span<const int64_t> rows) {
  int64_t total = 0;
  for (size_t i = 0; i < slots.size(); ++i) total += rows.empty() ? 1 : rows[i];
  const std::span<const int> classified =
      scheduler_.NormForClassifier(slots, hidden, worker_.normed(total), rows);
  if (classified.empty()) return {};
  // A sequence that stops there has no draft (Scheduler::Draft), so each
  // classified one's positions are rows_ when speculating.
  int64_t classified_rows = 0;
  for (int slot : classified) classified_rows += rows.empty() ? 1 : rows_[slot];
  scheduler_.CountSamplingStep();
  const std::span<float> logits =
      worker_.ClassifyOwnRows(classified_rows, StepLabel(classified.size(), classified[0]));
  const size_t width = worker_.stage().classifier_rows().size();
  size_t row = 0;
  for (int slot : classified) {
    const int64_t positions = rows.empty() ? 1 : rows_[slot];
    const Result<int32_t> token = scheduler_.SampleDrafted(
        slot, positions, [&](int64_t j) { return logits.subspan((row + j) * width, width); });
    if (!token) return token.error();
    next_[slot] = *token;
    row += static_cast<size_t>(positions);
  }
  return {};
}

}  // namespace inferno
