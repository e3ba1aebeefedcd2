// TensorParallelAgreement: how the ranks of one pipeline stage stay in step
// under tensor parallelism (tp > 1), over their TensorParallelGroup:
// - the leader's step decisions (step_decisions.h) reach every rank of the
//   last stage, so they start, cancel, tick and end at the same steps;
// - the last stage's ranks agree on each token: greedy sampling exchanges
//   each rank's best (value, id) of its ring's classifier rows — only that
//   crosses the group — and other sampling, or reporting logits, gathers the
//   whole vector (vocab) on each rank, where the same Sampler draws the same
//   token; a sequence the leader's constraint limits is sampled by the
//   leader alone, which broadcasts its token;
// - a stage's ranks gather their times on its tensor-parallel index 0 for
//   the ticks (pipeline_protocol.h).
// With tp == 1 (no group) the decisions and times stay local and the
// classifier exchanges are never called.
//
// Every call but active() is a collective of the stage's group: its ranks
// call it at the same step, in the same order.
//
// Thread-safety: not thread-safe; called from the rank's generator thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/error.h"
#include "base/timeline.h"
#include "loader/shard_plan.h"
#include "runtime/step_decisions.h"
#include "runtime/tensor_parallel_group.h"

namespace inferno {

class TensorParallelAgreement {
 public:
  // `tensor_parallel` (null when plan.tp == 1) is the group of this rank's
  // stage, in which this rank has index `tp_index`; `leader`: this rank is
  // the whole job's rank 0 (the last stage's index 0). `timeline` records
  // the waits (and the greedy pick's compute). All must outlive this.
  TensorParallelAgreement(TensorParallelGroup* tensor_parallel, const ShardPlan& plan, int tp_index,
                          int64_t vocab, bool leader, Timeline& timeline);

  // Whether the stage has several ranks to agree with.
  bool active() const { return group_ != nullptr; }

  // Last stage: the leader's `decisions`, on every rank of the stage (the
  // others' argument is ignored); with tp == 1, `decisions`. Errors: the
  // scatter's, or a corrupt encoding (naming rank 0).
  Result<StepDecisions> Share(StepDecisions decisions);

  // Last stage, tp > 1: the first id of the largest logit over the whole
  // vocabulary, from each rank's best of `ring_logits` (this rank's ring's
  // rows, plan.TpClassifierRows(tp_index)): the greedy token, as Sampler
  // picks it, without moving the logits. `label` names the timeline spans.
  Result<int32_t> GroupArgMax(int label, std::span<const float> ring_logits);

  // Last stage, tp > 1: the leader's `token` on every rank of the stage (the
  // others' argument is ignored), for a sequence only the leader samples.
  Result<int32_t> LeaderToken(int label, int32_t token);

  // Last stage, tp > 1: the leader's `draft` (at most `max` tokens) in
  // `draft` on every rank of the stage (the others' is replaced).
  Status LeaderDraft(int label, std::vector<int32_t>& draft, int64_t max);

  // Last stage, tp > 1: the logits (vocab) of every rank's `ring_logits`,
  // in a buffer of this object valid until the next call.
  Result<std::span<float>> GatherLogits(int label, std::span<const float> ring_logits);

  // This stage's ranks' compute and wait seconds, (tp, kTickValuesPerRank)
  // in tensor-parallel order, on the stage's tensor-parallel index 0; none
  // on its other ranks.
  Result<std::vector<double>> StageTimes();

 private:
  ProcessGroup* group_;  // null when tp == 1
  const ShardPlan& plan_;
  const RowRange ring_rows_;  // the classifier rows of this rank's ring
  const bool leader_;
  Timeline& timeline_;
  int64_t gathered_width_ = 0;  // tp > 1: the longest ring's rows (index 0's)
  std::vector<float> padded_;   // (gathered_width_) tp > 1: this ring's logits, padded for all_gather
  std::vector<float> logits_;   // (vocab) tp > 1: the gathered logits
};

}  // namespace inferno
