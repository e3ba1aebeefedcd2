#include "runtime/stage_worker.h"

#include <string>

#include <glog/logging.h>

#include "runtime/test_only_hang.h"

namespace inferno {

StageWorker::StageWorker(TransformerStage& stage, Timeline& timeline, KvBlockStore* blocks, int rank,
                         std::optional<int64_t> test_only_hang_step, int64_t max_draft)
    : stage_(stage),
      timeline_(timeline),
      blocks_(blocks),
      dim_(stage.config().hidden_size),
      max_group_(std::min<int64_t>(stage.max_positions_per_call(), stage.num_slots())),
      max_classified_(std::min(stage.max_positions_per_call(), max_group_ * (1 + max_draft))),
      rank_(rank),
      test_only_hang_step_(test_only_hang_step),
      positions_(static_cast<size_t>(stage.num_slots())),
      saves_(static_cast<size_t>(stage.num_slots())),
      hidden_(stage.max_positions_per_call() * dim_),
      normed_(max_classified_ * dim_),
      own_logits_(max_classified_ * stage.classifier_rows().size()) {}

void StageWorker::CutBack(int slot, int64_t position) {
  CHECK_LE(position, positions_[slot]) << "slot " << slot;
  positions_[slot] = position;
}

Status StageWorker::Forward(std::span<const SlotPositions> batch, std::span<float> x) {
  if (++forward_passes_ == test_only_hang_step_) TestOnlyHangForever(rank_, forward_passes_);
  if (Status done = stage_.Forward(batch, x, &timeline_, StepLabel(batch.size(), batch[0].slot)); !done) {
    return done;
  }
  for (const SlotPositions& part : batch) {
    positions_[part.slot] += part.n;
    if (Status saved = SaveRunBlocks(part.slot); !saved) return saved;
  }
  return {};
}

Status StageWorker::Start(int slot, const PrefixPlan& plan) {
  Restart(slot);
  if (plan.empty()) return {};
  const std::string what = "the prefix plan of slot " + std::to_string(slot) + " (" +
                           std::to_string(plan.restore.size()) + " blocks restored, " +
                           std::to_string(plan.save.size()) + " stored)";
  PendingSaves& saves = saves_[slot];
  if (blocks_ == nullptr) return Error::Corruption(what + ", but the prefix cache is off");
  if (saves.next < saves.blocks.size()) {
    return Error::Corruption(what + ", with " + std::to_string(saves.blocks.size() - saves.next) +
                             " blocks of its last sequence still to store");
  }
  const int64_t end = static_cast<int64_t>(plan.restore.size() + plan.save.size()) * kPrefixBlockPositions;
  if (end > stage_.context_length()) {
    return Error::Corruption(what + ", past the context of " + std::to_string(stage_.context_length()));
  }
  TimedScope scope(timeline_, SpanKind::kCompute, "restore prefix", slot);
  for (size_t i = 0; i < plan.restore.size(); ++i) {
    const int64_t first = static_cast<int64_t>(i) * kPrefixBlockPositions;
    if (Status restored = blocks_->Restore(plan.restore[i], slot, first); !restored) return restored;
  }
  positions_[slot] = plan.first_position();
  saves = PendingSaves{plan.first_position(), plan.save, 0};
  return {};
}

Status StageWorker::SaveRunBlocks(int slot) {
  PendingSaves& saves = saves_[slot];
  while (saves.next < saves.blocks.size()) {
    const int64_t first = saves.first + static_cast<int64_t>(saves.next) * kPrefixBlockPositions;
    if (first + kPrefixBlockPositions > positions_[slot]) break;
    if (Status saved = blocks_->Save(saves.blocks[saves.next], slot, first); !saved) return saved;
    ++saves.next;
  }
  return {};
}

Result<std::span<float>> StageWorker::EmbedAndForward(std::span<const int32_t> tokens,
                                                      std::span<const SlotPositions> batch) {
  std::span<float> x = hidden(static_cast<int64_t>(tokens.size()));
  stage_.Embed(tokens, x);
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
