#include "runtime/scheduler.h"

#include <algorithm>
#include <string>

#include <glog/logging.h>

#include "base/progress.h"
#include "runtime/pipeline_protocol.h"
#include "runtime/prompt_lookup.h"

namespace inferno {
namespace {

double Seconds(Scheduler::Clock::time_point begin, Scheduler::Clock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}

}  // namespace

Scheduler::Scheduler(const ShardPlan& plan, const GeneratorSettings& settings, SequenceSource* source,
                     GenerationObserver* observer, bool leader, std::chrono::milliseconds idle_tick,
                     StageWorker& worker, TensorParallelAgreement& agreement, Timeline& timeline,
                     PrefixCacheIndex* prefix_cache, DraftModel* draft)
    : plan_(plan),
      settings_(settings),
      source_(source),
      observer_(observer),
      leader_(leader),
      idle_tick_(idle_tick),
      worker_(worker),
      agreement_(agreement),
      timeline_(timeline),
      prefix_cache_(leader ? prefix_cache : nullptr),
      draft_(leader ? draft : nullptr),
      slots_(static_cast<size_t>(worker.stage().num_slots())) {}

void Scheduler::Begin() {
  start_ = Clock::now();
  next_report_ = start_ + idle_tick_;
}

Result<StepDecisions> Scheduler::Decide() {
  const Clock::time_point deadline = running_ == 0 ? Clock::now() + idle_tick_ : Clock::time_point::min();
  StepDecisions mine;
  if (leader_) {
    const auto free = std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; });
    for (int64_t i = 0; i < free; ++i) {
      const WaitingOutside waiting;  // for a client's request, when idle
      std::optional<SequenceSpec> spec = source_->Next(i == 0 ? deadline : Clock::time_point::min());
      if (!spec) break;
      if (prefix_cache_ != nullptr) spec->prefix = prefix_cache_->Admit(spec->id, spec->prompt);
      mine.admitted.push_back(std::move(*spec));
    }
    if (!mine.admitted.empty()) ReportPrefixCache();
    for (const Slot& s : slots_) {
      if (s.busy && source_->Cancelled(s.id)) mine.cancelled.push_back(s.id);
    }
    mine.exhausted = source_->Exhausted();
    mine.tick_due = Clock::now() >= next_report_;
  }
  Result<StepDecisions> decisions = agreement_.Share(std::move(mine));
  if (!decisions) return decisions.error();
  for (int64_t id : decisions->cancelled) {
    for (Slot& s : slots_) {
      if (s.busy && s.id == id) s.cancelled = true;
    }
  }
  return decisions;
}

Status Scheduler::Admit(const StepDecisions& decisions, const Started& started) {
  for (const SequenceSpec& spec : decisions.admitted) {
    const auto free = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; });
    if (free == slots_.end()) {
      return Error::Corruption("step decisions from rank 0: " + std::to_string(decisions.admitted.size()) +
                               " sequences admitted, more than the free slots");
    }
    const std::vector<int32_t>& prompt = spec.prompt;
    const TransformerStage& stage = worker_.stage();
    if (Status valid = ValidatePrompts({prompt}, stage.config(), stage.context_length()); !valid) {
      return valid.error().Prefixed("sequence " + std::to_string(spec.id) + ": ");
    }
    if (spec.prefix.first_position() >= static_cast<int64_t>(prompt.size())) {
      return Error::Corruption("step decisions from rank 0: sequence " + std::to_string(spec.id) + " of " +
                               std::to_string(prompt.size()) + " tokens restores " +
                               std::to_string(spec.prefix.first_position()) + " positions");
    }
    const int slot = static_cast<int>(free - slots_.begin());
    Slot& s = *free;
    s.busy = true;
    s.id = spec.id;
    s.prompt_length = static_cast<int64_t>(prompt.size());
    worker_.Restart(slot);
    s.previous = prompt.back();
    s.generated = 0;
    s.max_new_tokens = spec.max_new_tokens;
    s.cancelled = false;
    // Only the leader knows a draft model's distribution of drawn drafts.
    s.leader_picks = spec.constraint != nullptr || spec.leader_picks ||
                     (settings_.draft_model && spec.sampling.temperature > 0.0f);
    s.prefix_pending = prefix_cache_ != nullptr && !spec.prefix.empty();
    s.sampler.emplace(spec.sampling, static_cast<int32_t>(stage.config().vocab_size), prompt,
                      spec.constraint);
    if (settings_.speculate > 0) s.tokens.assign(prompt.begin(), prompt.end());
    s.draft.clear();
    s.draft_probs.clear();
    if (draft_ != nullptr) {
      if (Status drafting = draft_->Start(slot, prompt, spec.sampling); !drafting) {
        return drafting.error().Prefixed("draft model: sequence " + std::to_string(spec.id) + ": ");
      }
    }
    s.missed_drafts = 0;
    s.undrafted_steps = 0;
    ++running_;
    report_.prompt_tokens += s.prompt_length;
    if (Status done = started(slot, prompt, spec.prefix); !done) return done;
  }
  return {};
}

void Scheduler::Stop(int slot, FinishReason reason) {
  Slot& s = slots_[slot];
  if (observer_ != nullptr) observer_->OnSequenceDone(s.id, reason);
  if (s.prefix_pending) {
    prefix_cache_->Ended(s.id);
    s.prefix_pending = false;
    ReportPrefixCache();
  }
  s.busy = false;
  s.sampler.reset();
  --running_;
}

std::span<const int> Scheduler::NormForClassifier(std::span<const int> slots, std::span<const float> hidden,
                                                  std::span<float> normed, std::span<const int64_t> rows) {
  TimedScope scope(timeline_, SpanKind::kCompute, "final norm", StepLabel(slots.size(), slots[0]));
  const size_t dim = static_cast<size_t>(worker_.dim());
  classified_.clear();
  size_t in = 0;
  size_t out = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    const size_t count = rows.empty() ? 1 : static_cast<size_t>(rows[i]);
    Slot& s = slots_[slots[i]];
    if (s.prefix_pending) {
      prefix_cache_->Prefilled(s.id);
      s.prefix_pending = false;
    }
    if (!SamplesAnother(slots[i])) {
      Stop(slots[i], FinishReason::kLength);
      in += count;
      continue;
    }
    for (size_t r = 0; r < count; ++r, ++in, ++out) {
      worker_.stage().FinalNorm(hidden.subspan(in * dim, dim), normed.subspan(out * dim, dim));
    }
    classified_.push_back(slots[i]);
  }
  return classified_;
}

Result<std::span<const int32_t>> Scheduler::Draft(int slot, int64_t max_rows) {
  Slot& s = slots_[slot];
  s.draft_probs.clear();
  if (s.undrafted_steps > 0) {
    --s.undrafted_steps;
    s.draft.clear();
    return std::span<const int32_t>(s.draft);
  }
  const int64_t room =
      std::max<int64_t>(std::min({settings_.speculate, s.max_new_tokens - s.generated - 1, max_rows - 1,
                                  worker_.stage().context_length() - worker_.position(slot) - 2}),
                        0);
  if (!settings_.draft_model) {
    DraftByPromptLookup(s.tokens, room, s.draft);
    return std::span<const int32_t>(s.draft);
  }
  s.draft.clear();
  if (room == 0) return std::span<const int32_t>(s.draft);
  if (draft_ != nullptr) {
    if (Status drafted = draft_->Draft(slot, s.tokens, room, s.draft, s.draft_probs); !drafted) {
      return drafted.error().Prefixed("draft model: sequence " + std::to_string(s.id) + ": ");
    }
  }
  if (agreement_.active()) {
    if (Status shared = agreement_.LeaderDraft(slot, s.draft, room); !shared) return shared.error();
  }
  return std::span<const int32_t>(s.draft);
}

Result<int32_t> Scheduler::SampleDrafted(int slot, int64_t positions,
                                         const std::function<std::span<float>(int64_t)>& row) {
  Slot& s = slots_[slot];
  CHECK(positions == 1 || static_cast<int64_t>(s.draft.size()) + 1 == positions) << "slot " << slot;
  const int64_t first = worker_.position(slot) - positions;  // the next token's
  int64_t kept = 0;                                          // drafted tokens
  int32_t token = -1;
  for (int64_t j = 0; j < positions; ++j) {
    const int32_t drafted = j + 1 < positions ? s.draft[static_cast<size_t>(j)] : -1;
    std::span<const float> q;
    if (drafted >= 0 && !s.draft_probs.empty()) {
      const size_t vocab = s.draft_probs.size() / s.draft.size();
      q = std::span<const float>(s.draft_probs).subspan(static_cast<size_t>(j) * vocab, vocab);
    }
    Result<int32_t> sampled = SampleNext(slot, row(j), drafted, q);
    if (!sampled) return sampled;
    token = *sampled;
    if (token < 0 || token != drafted) break;
    ++kept;
  }
  if (positions == 1) return token;
  const int64_t drafted = positions - 1;
  s.missed_drafts = 2 * kept < drafted ? s.missed_drafts + 1 : 0;
  if (s.missed_drafts > 0)
    s.undrafted_steps = std::min(int64_t{1} << std::min<int64_t>(s.missed_drafts, 30), kMaxUndraftedSteps);
  report_.drafted_tokens += drafted;
  report_.accepted_tokens += kept;
  if (leader_ && settings_.report_drafts) settings_.report_drafts(drafted, kept);
  if (s.busy) worker_.CutBack(slot, first + 1 + kept);
  return token;
}

Result<int32_t> Scheduler::SampleNext(int slot, std::span<float> ring_logits, int32_t draft,
                                      std::span<const float> draft_probs) {
  Slot& s = slots_[slot];
  if (s.cancelled) {
    Stop(slot, FinishReason::kCancelled);
    return -1;
  }
  const bool report_logits = observer_ != nullptr && settings_.report_logits;
  std::span<float> logits = ring_logits;
  if (agreement_.active() && s.sampler->ArgMaxOnly() && !s.leader_picks && !settings_.report_logits) {
    Result<int32_t> best = agreement_.GroupArgMax(slot, ring_logits);
    if (!best) return best.error();
    return Accept(slot, *best);
  }
  if (agreement_.active()) {
    Result<std::span<float>> gathered = agreement_.GatherLogits(slot, ring_logits);
    if (!gathered) return gathered.error();
    logits = *gathered;
  }
  int32_t token = -1;
  // A sequence the leader's constraint limits: only the leader samples, and
  // the stage's other ranks take its token.
  if (leader_ || !s.leader_picks) {
    TimedScope scope(timeline_, SpanKind::kCompute, "sample", slot);
    if (report_logits) observer_->OnLogits(s.id, logits);
    token = s.sampler->Sample(logits, draft, draft_probs);
    if (observer_ != nullptr && s.sampler->options().logprobs >= 0) {
      observer_->OnLogprobs(s.id, s.sampler->last_logprobs());
    }
  }
  if (agreement_.active() && s.leader_picks) {
    Result<int32_t> leaders = agreement_.LeaderToken(slot, token);
    if (!leaders) return leaders.error();
    token = *leaders;
  }
  return Accept(slot, token);
}

int32_t Scheduler::Accept(int slot, int32_t token) {
  Slot& s = slots_[slot];
  if (!first_token_) {
    first_token_ = Clock::now();
    report_.time_to_first_token_seconds = Seconds(start_, *first_token_);
  }
  if (std::find(settings_.stop_ids.begin(), settings_.stop_ids.end(), token) != settings_.stop_ids.end()) {
    Stop(slot, FinishReason::kStopToken);
    return -1;
  }
  ++s.generated;
  ++report_.generated_tokens;
  if (observer_ != nullptr) observer_->OnToken(s.id, s.previous, token);
  s.previous = token;
  if (settings_.speculate > 0) s.tokens.push_back(token);
  const bool context_full = worker_.position(slot) >= worker_.stage().context_length();
  if (!SamplesAnother(slot) || context_full) {
    Stop(slot, FinishReason::kLength);
    return -1;
  }
  return token;
}

void Scheduler::ReportPrefixCache() const {
  if (prefix_cache_ != nullptr && settings_.report_prefix_cache) {
    settings_.report_prefix_cache(prefix_cache_->stats());
  }
}

void Scheduler::ReportRankTimes(std::span<const double> times) {
  if (!leader_ || !settings_.report_rank_times) return;
  std::vector<RankTimes> ranks;
  for (int stage = 0; stage < plan_.pp; ++stage) {
    for (int t = 0; t < plan_.tp; ++t) {
      const size_t at = static_cast<size_t>(stage * plan_.tp + t) * kTickValuesPerRank;
      ranks.push_back(RankTimes{plan_.RankOf(stage, t), times[at], times[at + 1]});
    }
  }
  settings_.report_rank_times(ranks);
}

GenerationReport Scheduler::Finish() {
  const Clock::time_point end = Clock::now();
  if (leader_) {
    report_.total_seconds = Seconds(start_, end);
    report_.decode_seconds = first_token_ ? Seconds(*first_token_, end) : 0.0;
  }
  return std::move(report_);
}

}  // namespace inferno
