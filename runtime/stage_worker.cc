#include "runtime/stage_worker.h"

#include "runtime/test_only_hang.h"

namespace inferno {

StageWorker::StageWorker(TransformerStage& stage, Timeline& timeline, int rank,
                         std::optional<int64_t> test_only_hang_step)
    : stage_(stage),
      timeline_(timeline),
      dim_(stage.config().hidden_size),
      max_group_(std::min<int64_t>(stage.max_positions_per_call(), stage.num_slots())),
      rank_(rank),
      test_only_hang_step_(test_only_hang_step),
      positions_(static_cast<size_t>(stage.num_slots())),
      hidden_(stage.max_positions_per_call() * dim_),
      normed_(max_group_ * dim_),
      own_logits_(max_group_ * stage.classifier_rows().size()) {}

Status StageWorker::Forward(std::span<const SlotPositions> batch, std::span<float> x) {
  if (++forward_passes_ == test_only_hang_step_) TestOnlyHangForever(rank_, forward_passes_);
  if (Status done = stage_.Forward(batch, x, &timeline_, StepLabel(batch.size(), batch[0].slot)); !done) {
    return done;
  }
  for (const SlotPositions& part : batch) positions_[part.slot] += part.n;
  return {};
}

Result<std::span<float>> StageWorker::EmbedAndForward(std::span<const int32_t> tokens,
                                                      std::span<const SlotPositions> batch) {
  std::span<float> x = hidden(static_cast<int64_t>(tokens.size()));
  if (Status embedded = stage_.Embed(tokens, x); !embedded) return embedded.error();
  if (Status done = Forward(batch, x); !done) return done.error();
  return x;
}

std::span<float> StageWorker::ClassifyOwnRows(int64_t n, int label) {
  TimedScope scope(timeline_, SpanKind::kCompute, "classifier", label);
  const std::span<float> logits = std::span<float>(own_logits_).first(n * stage_.classifier_rows().size());
  stage_.ClassifierSlice(std::span<const float>(normed_).first(n * dim_), logits);
  return logits;
}

}  // namespace inferno
