// Scheduler: the sequences of the last pipeline stage, from admission to
// their end. At each step of the generator loop it takes the step's
// decisions (step_decisions.h: the leader asks the SequenceSource, and the
// stage's other ranks follow it through the TensorParallelAgreement), starts
// the admitted sequences in free KV-cache slots, marks the cancelled ones;
// it picks each next token (sampling, or agreeing on it under tensor
// parallelism), reports it to the observer, stops sequences (stop token,
// max_new_tokens, full context, cancelled) and keeps the leader's report.
// It also keeps the clock of the rank-time reports (ticks). On the leader,
// with the prefix cache on, it asks the PrefixCacheIndex for each admitted
// sequence's plan (which travels with the step's decisions), and tells it
// when a sequence's prefill has run on every rank (its first pass through
// the classifier: the last stage runs a prompt's positions last) and when
// it ends.
//
// With a draft model (GeneratorSettings::draft, the leader's DraftModel)
// it starts each admitted sequence there too and drafts from it rather than
// by prompt lookup.
//
// It sends nothing: the loops (one_stage_loop.h, pipelined_loop.h) move the
// sequences it starts through the stage.
//
// Thread-safety: not thread-safe; called from the rank's generator thread;
// the source and observer are called from that thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "base/error.h"
#include "base/timeline.h"
#include "loader/shard_plan.h"
#include "runtime/draft_model.h"
#include "runtime/generation.h"
#include "runtime/prefix_cache_index.h"
#include "runtime/sampler.h"
#include "runtime/sequence_source.h"
#include "runtime/stage_worker.h"
#include "runtime/step_decisions.h"
#include "runtime/tensor_parallel_agreement.h"

namespace inferno {

// A KV-cache slot of the last stage and the sequence running in it.
struct Slot {
  bool busy = false;  // a sequence runs in it
  int64_t id = 0;     // SequenceSpec::id
  int64_t prompt_length = 0;
  int32_t previous = 0;   // the last token fed or sampled
  int64_t generated = 0;  // tokens sampled and kept
  int64_t max_new_tokens = 0;
  bool cancelled = false;          // stops before its next token is sampled
  bool leader_picks = false;       // SequenceSpec::leader_picks, or the leader's constraint
  bool prefix_pending = false;     // leader: holds prefix-cache blocks until its prefill has run
  std::optional<Sampler> sampler;  // while busy
  // With speculation: the prompt and the tokens kept, and the draft of the
  // step under way; the drafts in a row of which less than half was kept,
  // and the steps still to run without a draft after them.
  std::vector<int32_t> tokens;
  std::vector<int32_t> draft;
  std::vector<float> draft_probs;  // from a sampling draft model: (draft, vocab) its q

  int64_t missed_drafts = 0;
  int64_t undrafted_steps = 0;
};

class Scheduler {
 public:
  using Clock = Timeline::Clock;

  // `source` (non-null), `observer` (may be null), `prefix_cache` (null
  // when the cache is off) and `draft` (null without a draft model) are used
  // on the leader only; `idle_tick` is how
  // long an idle loop waits for a sequence, and how often the ranks' times
  // are reported. All must outlive this.
  Scheduler(const ShardPlan& plan, const GeneratorSettings& settings, SequenceSource* source,
            GenerationObserver* observer, bool leader, std::chrono::milliseconds idle_tick,
            StageWorker& worker, TensorParallelAgreement& agreement, Timeline& timeline,
            PrefixCacheIndex* prefix_cache = nullptr, DraftModel* draft = nullptr);

  // Starts the run's clock.
  void Begin();

  // This step's decisions (a collective of the stage's group under tensor
  // parallelism): the leader asks the source for sequences for the free
  // slots — waiting up to idle_tick for the first when none runs — and the
  // prefix cache for their plans, which running ones are cancelled, whether
  // more will come and whether a tick is due. Marks the cancelled
  // sequences. Errors: the agreement's.
  Result<StepDecisions> Decide();

  // What a loop does with a sequence just started in `slot`: prefill its
  // `prompt` after its prefix `plan`, or send them to the first stage.
  using Started = std::function<Status(int slot, std::span<const int32_t> prompt, const PrefixPlan& plan)>;

  // Starts each admitted sequence of `decisions` in a free slot, in order,
  // from position 0, and calls `started` for it. Errors: no free slot (the
  // leader admitted more than there are), a prompt the stage cannot hold
  // (naming the sequence), the draft model's, or the first of `started`'s.
  Status Admit(const StepDecisions& decisions, const Started& started);

  const Slot& slot(int slot) const { return slots_[slot]; }
  // Whether sequences run drafts (GeneratorSettings::speculate > 0).
  bool speculating() const { return settings_.speculate > 0; }
  int64_t running() const { return running_; }

  // Stops the sequences of `slots` that sample no more, and writes the
  // final-normed last hidden state of each other one — rows of `hidden`
  // (slots.size(), dim), in order — as the next row of `normed` (dim floats
  // each); returns those sequences' slots, valid until the next call. With
  // `rows` (one count per slot; empty = 1 each), sequence i has rows[i]
  // rows of `hidden`, its next token's and its draft's, and all of them
  // go to `normed`.
  std::span<const int> NormForClassifier(std::span<const int> slots, std::span<const float> hidden,
                                         std::span<float> normed, std::span<const int64_t> rows = {});

  // Speculation: the slot's draft for its next step (kept in the Slot) —
  // up to settings.speculate tokens by prompt lookup or from the draft
  // model (with their q when it samples), no more than the
  // sequence may still sample after its next token, than fit in the
  // context behind it, or than one step of `max_rows` positions holds;
  // empty when off. A draft costs a step its positions whether kept or not,
  // so after m drafts in a row of which less than half was kept the
  // sequence runs min(2^m, kMaxUndraftedSteps) steps without one (a text
  // that does not repeat itself drafts rarely). By prompt lookup a pure
  // function of the tokens every rank of the stage agreed on, so each
  // computes the same; a draft model runs on the leader only, which under
  // tensor parallelism broadcasts the draft to the stage (a collective of
  // the stage's group when there is room for one). Errors: the draft
  // model's and the agreement's.
  Result<std::span<const int32_t>> Draft(int slot, int64_t max_rows);
  static constexpr int64_t kMaxUndraftedSteps = 64;

  // The next token of the sequence in `slot` from the logits of the ring's
  // rows, `ring_logits` (TpClassifierRows of this rank), which it may
  // overwrite; reports it, and returns it, or -1 when the sequence stops.
  // With a `draft` token (>= 0) and its `draft_probs` (empty: a certain
  // draft) the sampler keeps the target distribution and returns the draft
  // as often as it allows (Sampler::Sample).
  // Under tensor parallelism every rank of the last stage calls it and gets
  // the same token. Precondition: the slot's sequence went through
  // NormForClassifier since its last token.
  Result<int32_t> SampleNext(int slot, std::span<float> ring_logits, int32_t draft = -1,
                             std::span<const float> draft_probs = {});

  // The next tokens of the sequence in `slot` from a step of `positions`
  // positions, its next token's and its draft's (Draft): row(j) gives the
  // ring's logits of position j (as SampleNext takes them). Samples
  // position after position, each with its drafted token, while the
  // sampler picks the draft; cuts the slot back behind the last kept
  // position (StageWorker::CutBack) and counts the draft. Returns the last
  // token sampled, the one to run next, or -1 when the sequence stops.
  // Without a draft (positions == 1) it is SampleNext.
  Result<int32_t> SampleDrafted(int slot, int64_t positions,
                                const std::function<std::span<float>(int64_t)>& row);

  // A classifier pass that samples the next token of a group's sequences.
  void CountSamplingStep() { ++report_.sampling_steps; }

  // The ranks' times were just reported, or a tick that carries them sent:
  // the next is due idle_tick from now.
  void RestartTickClock() { next_report_ = Clock::now() + idle_tick_; }

  // Leader: reports every rank's time to the settings' report_rank_times,
  // if set. `times` (pp, tp, kTickValuesPerRank): the compute and wait
  // seconds of each rank, stage by stage, first first.
  void ReportRankTimes(std::span<const double> times);

  // The report so far, and its totals, computed now.
  GenerationReport Finish();

 private:
  bool SamplesAnother(int slot) const { return slots_[slot].generated < slots_[slot].max_new_tokens; }
  // The end of the sequence in `slot`, which frees it.
  void Stop(int slot, FinishReason reason);
  // Leader: reports the prefix cache's stats, if the settings ask.
  void ReportPrefixCache() const;
  // The token (or a stop) from the sampled `token` of the slot's sequence.
  int32_t Accept(int slot, int32_t token);

  const ShardPlan& plan_;
  const GeneratorSettings& settings_;
  SequenceSource* source_;  // leader
  GenerationObserver* observer_;
  const bool leader_;
  const std::chrono::milliseconds idle_tick_;
  StageWorker& worker_;
  TensorParallelAgreement& agreement_;
  Timeline& timeline_;
  PrefixCacheIndex* prefix_cache_;  // leader, cache on
  DraftModel* draft_;               // leader, with a draft model
  std::vector<Slot> slots_;         // (num_slots)
  int64_t running_ = 0;             // busy slots
  std::vector<int> classified_;
  Clock::time_point next_report_;  // when the ranks' times are next reported
  GenerationReport report_;
  Clock::time_point start_;
  std::optional<Clock::time_point> first_token_;
};

}  // namespace inferno
