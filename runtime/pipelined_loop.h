// PipelinedLoop: the generator loop of one rank of a pipeline of W > 1
// stages (generator.h describes the whole). It handles the messages from
// its ring predecessor in order, until the end message has gone round:
// - first stage: an admitted prompt is prefilled, a group's tokens run as
//   one batched step; their hidden states go on;
// - other stages: hidden states run through the stage's layers and go on;
//   on the last stage the sequences whose prompt is in go to the
//   classifier (final norm, then a classify step round the ring);
// - classify: each rank appends the logits of its rows; back at the last
//   stage, the Scheduler samples each sequence's next token, and the tokens
//   go to the first stage in groups (TokenGroups);
// - control: ticks carry every stage's time to the leader; the end stops
//   every rank.
// With speculative decoding (GeneratorSettings::speculate; the rule is
// one_stage_loop.h's) the last stage drafts a sequence's next step when it
// samples its token, and a drafted step travels alone: the token message
// carries the draft, the first stage runs both (1 + K positions), the
// hidden states go on as one message, and the classify step carries a row
// per position. The last stage samples them with Scheduler::SampleDrafted,
// which cuts its KV back; every token message names the position its token
// runs at, so the first stage cuts back there, and each later stage to the
// position of the next hidden states it receives.
// The last stage admits sequences between messages (the Scheduler's step
// decisions), and when none runs, waits for the source and sends a tick
// or, once it is exhausted, the end.
//
// Handling a message only sends (sends never wait for the peer), and each
// sequence has one message in flight at a time (plus its prompt chunks), so
// there is no deadlock and the queues stay small.
//
// Thread-safety: not thread-safe; Run is called once, from the rank's
// generator thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/error.h"
#include "engine/transformer.h"
#include "loader/shard_plan.h"
#include "runtime/pipeline_protocol.h"
#include "runtime/pipeline_ring.h"
#include "runtime/scheduler.h"
#include "runtime/stage_worker.h"
#include "runtime/tensor_parallel_agreement.h"
#include "runtime/token_groups.h"

namespace inferno {

class PipelinedLoop {
 public:
  // All must outlive this. Precondition: plan.pp > 1.
  PipelinedLoop(const ShardPlan& plan, PipelineRing& ring, Scheduler& scheduler, StageWorker& worker,
                TensorParallelAgreement& agreement);

  // Runs until the end message has gone round. Errors: malformed messages
  // and communication failures naming the peer and op, the scheduler's and
  // the stage's.
  Status Run();

 private:
  // Last stage: this step's decisions: admits sequences (sending their
  // prompts to the first stage), sends a tick or the end when due.
  Status Schedule();
  Status Handle(const std::vector<PipelineMessage>& step);
  // Every rank: the end, passed on to the last stage; or a tick, to which
  // each stage but the last appends its time, and whose times the last
  // stage reports.
  Status HandleControl(const ControlMessage& header, const PipelineMessage& message);
  // First stage: the prompt of a sequence starting in its slot: prefills it.
  Status HandleAdmit(const AdmitMessage& header, const PipelineMessage& message);
  // Starts the slot with the prefix plan on this stage, and passes it on
  // unless this is the last stage (where it began).
  Status HandlePrefix(const PrefixMessage& header, const PipelineMessage& message);
  // First stage: the next token of each sequence of the step: one batched
  // forward; their hidden states go on as one step.
  Status HandleTokens(const std::vector<PipelineMessage>& step);
  // Hidden states from the previous stage (position 0 starts the slot's
  // sequence anew), of one or several sequences: one batched forward. The
  // last stage starts the classifier for the sequences whose prompt is in.
  Status HandleHidden(const std::vector<PipelineMessage>& step);
  // Last stage: the rows (x's first, (batch_'s parts, dim)) of the step's
  // sequences whose prompt is in go on as a classify step, or the group
  // ends here when none of them samples another.
  Status StartClassifier(std::span<float> x);
  // Appends the logits of this rank's rows to each message of a classify
  // step, in one pass over the rows; passes them on as one step, or on the
  // last stage, where they complete the ring's rows, samples each
  // sequence's next token.
  Status HandleClassify(const std::vector<PipelineMessage>& step);
  // Last stage: sends the sampled tokens in groups (TokenGroups).
  Status SendTokens();

  const ShardPlan& plan_;
  PipelineRing& ring_;
  Scheduler& scheduler_;
  StageWorker& worker_;
  TensorParallelAgreement& agreement_;
  TransformerStage& stage_;
  const int64_t dim_;
  const RowRange ring_rows_;  // the classifier rows of this rank's ring
  TokenGroups groups_;        // last stage
  // (max_group, dim + ring_rows_.size()): per sequence of a classify step,
  // the final-normed hidden state, then the logits of the ring's rows so far
  // (the sampler may overwrite them).
  std::vector<float> classify_;
  std::vector<int32_t> prompt_;           // first stage: an admitted prompt
  std::vector<int32_t> plan_ids_;         // a prefix plan's restored then stored block ids
  std::vector<int32_t> tokens_;           // first stage: the tokens of a step
  std::vector<SlotPositions> batch_;      // the positions of a step
  std::vector<MessageHeader> headers_;    // the messages of a step being sent
  std::vector<int> at_classifier_;        // last stage: the sequences of a step at the classifier
  std::vector<int64_t> classifier_rows_;  // last stage: the positions of each of them there
  std::vector<int64_t> rows_;             // last stage: (num_slots) the same by slot
  bool ended_ = false;                    // the end message has come
  bool tick_on_the_way_ = false;          // last stage: a tick is on its way round the ring
  std::vector<double> tick_times_;        // a tick's payload: (stages, tp, kTickValuesPerRank) on ring 0
};

}  // namespace inferno
