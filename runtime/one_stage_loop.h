// OneStageLoop: the generator loop when the pipeline has one stage (its
// ranks may still split the stage's heads: tensor parallelism). While the
// source has sequences or any runs, it admits sequences into free slots
// between rounds — prefilling each and sampling its first token — and runs
// one token of every running sequence per round, in slot order, as groups
// of up to max_group sequences, each group one batched step (one forward,
// one classifier pass). No pipeline message is sent.
//
// Speculative decoding (GeneratorSettings::speculate): a sequence's step
// runs its next token and its draft d1..dk (Scheduler::Draft) at the
// positions after it, and the classifier runs over all k + 1 of them. The
// sampler then picks from the first position's logits; when it picks d1
// (Sampler::Sample with the draft), d1's position was run on the right
// token, so the next position's logits are the sequence's next ones, and so
// on: the sequence keeps the draft up to the first token the sampler did
// not pick, plus that token, and its KV cache is cut back behind the last
// kept position (StageWorker::CutBack). Since every logit of a batched
// pass is bit for bit what it is alone (transformer.h), greedy tokens are
// those of decoding without a draft. Under tensor parallelism every rank of
// the stage drafts, samples and cuts back the same (a prompt-lookup draft
// comes from the tokens they agreed on; a draft model's, from the leader's
// broadcast).
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
  // next_ unless the sequence stops. With `rows` (per slot: 1 + its draft's
  // tokens; empty = 1 each) `hidden` holds every position of the step, and
  // each sequence keeps what its sampler agrees to of its draft.
  Status Classify(std::span<const int> slots, std::span<const float> hidden,
                  std::span<const int64_t> rows = {});
  // One token of every running sequence.
  Status RunRound();

  Scheduler& scheduler_;
  StageWorker& worker_;
  TensorParallelAgreement& agreement_;
  std::vector<int32_t> next_;         // (num_slots) the sampled token to run next
  std::vector<int32_t> tokens_;       // the tokens of a step
  std::vector<SlotPositions> batch_;  // the positions of a step
  std::vector<int> group_;            // the slots of a step
  std::vector<int64_t> rows_;         // (num_slots) the positions of each slot's step
  std::vector<int64_t> group_rows_;   // the positions of each slot of a step
};

}  // namespace inferno
