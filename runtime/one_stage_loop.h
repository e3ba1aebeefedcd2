// OneStageLoop: the generator loop when the pipeline has one stage (its
// ranks may still split the stage's heads: tensor parallelism). While the
// source has sequences or any runs, it admits sequences into free slots
// between rounds — prefilling each and sampling its first token — and runs
// one token of every running sequence per round, in slot order, as groups
// of up to max_group sequences, each group one batched step (one forward,
// one classifier pass). No pipeline message is sent.
//
// Thread-safety: not thread-safe; Run is called once, from the rank's
// generator thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/error.h"
#include "engine/transformer.h"
#include "runtime/scheduler.h"
#include "runtime/stage_worker.h"
#include "runtime/tensor_parallel_agreement.h"

namespace inferno {

class OneStageLoop {
 public:
  // All must outlive this.
  OneStageLoop(Scheduler& scheduler, StageWorker& worker, TensorParallelAgreement& agreement);

  // Runs until the source is exhausted and every sequence has stopped.
  // Errors: the scheduler's, the stage's and the agreement's.
  Status Run();

 private:
  // The classifier over `hidden` (slots.size(), dim), the last position run
  // of each sequence of `slots`, in one pass, and their next tokens, kept in
  // next_ unless the sequence stops.
  Status Classify(std::span<const int> slots, std::span<const float> hidden);
  // One token of every running sequence.
  Status RunRound();

  Scheduler& scheduler_;
  StageWorker& worker_;
  TensorParallelAgreement& agreement_;
  std::vector<int32_t> next_;         // (num_slots) the sampled token to run next
  std::vector<int32_t> tokens_;       // the tokens of a step
  std::vector<SlotPositions> batch_;  // the positions of a step
};

}  // namespace inferno
