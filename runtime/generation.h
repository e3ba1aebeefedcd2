// The vocabulary between the generator loop (generator.h) and its callers:
// the observer the leader reports to, the settings of a run, the report it
// returns, and the checks of prompts against a stage.
//
// Thread-safety: plain values and pure functions; an observer is called from
// the generator's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/error.h"
#include "base/timeline.h"
#include "model/model_config.h"
#include "runtime/prefix_cache_index.h"
#include "runtime/sequence_source.h"
#include "runtime/token_logprobs.h"

namespace inferno {

class TransformerStage;

// What the leader's caller sees while generating. Called on the leader only,
// from the generator's thread; it must not block (the pipeline waits).
class GenerationObserver {
 public:
  virtual ~GenerationObserver() = default;
  // The logits (vocab) of sequence `id` from which its next token is sampled.
  virtual void OnLogits(int64_t id, std::span<const float> logits) = 0;
  // A generated token of sequence `id` (never the stop token that ends it),
  // following `previous` (the last prompt token for the first one).
  virtual void OnToken(int64_t id, int32_t previous, int32_t token) = 0;
  // The logprobs of the token of sequence `id` about to be reported to
  // OnToken (or that stops it), when its SamplingOptions ask for them.
  virtual void OnLogprobs(int64_t /*id*/, const TokenLogprobs& /*logprobs*/) {}
  virtual void OnSequenceDone(int64_t id, FinishReason reason) = 0;
};

// One rank's time in the generator loop so far: the totals of its Timeline.
struct RankTimes {
  int rank = 0;
  double compute_seconds = 0;  // SpanKind::kCompute
  double wait_seconds = 0;     // SpanKind::kWait: blocked for a message from the ring predecessor
};

// What holds for every sequence of a run, and what the leader reports.
struct GeneratorSettings {
  // A sequence ends when it samples one of these (the model's EOS ids; see
  // engine/stop_tokens.h); it is neither reported nor counted.
  std::vector<int32_t> stop_ids;
  // Whether the observer's OnLogits is called. Under tensor parallelism,
  // greedy sampling moves only each rank's best logit when it is not.
  bool report_logits = true;
  // When set, called on the leader, from the generator's thread (it must not
  // block), with the RankTimes of every rank, stage by stage, each stage's
  // in tensor-parallel order, about every kIdleTick (see generator.h), busy or
  // idle. Each rank's figures are its own Timeline's totals: with several
  // stages they travel on the ticks of the leader's ring
  // (pipeline_protocol.h), each stage appending its ranks' as the tick
  // passes, so they are as old as the tick's trip round the ring. Under
  // tensor parallelism a stage's ranks gather theirs on its index 0 (one
  // gather over the stage's group per tick).
  std::function<void(std::span<const RankTimes>)> report_rank_times;
  // The prefix cache's budget over the whole job's ranks, in bytes: it
  // holds PrefixCacheBlocks (kv_block_store.h) blocks; 0 = off. Every rank
  // must be given the same.
  int64_t prefix_cache_bytes = 0;
  // When set, called on the leader, from the generator's thread (it must not
  // block), with the prefix cache's stats after each step that admitted
  // sequences and each sequence that dropped blocks; never with the cache
  // off.
  std::function<void(const PrefixCacheStats&)> report_prefix_cache;
  // Speculative decoding: at each step a running sequence runs, besides its
  // next token, up to this many tokens drafted by prompt lookup
  // (prompt_lookup.h) or a draft model (below), and keeps those its sampler
  // agrees with (see
  // one_stage_loop.h, pipelined_loop.h); 0 = off.
  // Every rank must be given the same.
  int64_t speculate = 0;
  // When set, called on the leader, from the generator's thread (it must not
  // block), after each step of a sequence that ran a draft: its drafted
  // tokens and those kept.
  std::function<void(int64_t drafted, int64_t accepted)> report_drafts;
  // With speculate > 0: whether a draft model on the leader drafts instead
  // of prompt lookup (draft_model.h), and on the leader that model: the
  // whole of a model of the same vocabulary as one stage with at least the
  // stage's slots (null on other ranks). Every rank must be given the same
  // draft_model. Under tensor parallelism the leader broadcasts each draft
  // to its stage and samples drawn tokens alone (TensorParallelAgreement).
  bool draft_model = false;
  TransformerStage* draft = nullptr;
};

// The leader's summary; on other ranks only `timelines` is empty and the
// counters are zero.
struct GenerationReport {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  // The classifier passes that sampled tokens: each samples the next token
  // of every sequence of a group at once (generated_tokens / sampling_steps
  // is the mean group size).
  int64_t sampling_steps = 0;
  // Speculative decoding: the drafted tokens run, and those kept (each
  // also counts in generated_tokens).
  int64_t drafted_tokens = 0;
  int64_t accepted_tokens = 0;
  double time_to_first_token_seconds = 0;  // start to the first sampled token
  double decode_seconds = 0;               // first sampled token to the end
  double total_seconds = 0;
  std::vector<std::vector<int32_t>> generated;  // (prompts, its tokens): Generate only
  std::vector<Timeline> timelines;              // every rank's, in rank order
};

// Fails, naming the prompt (0-based) and the value, when a prompt is empty,
// longer than `context_length`, or holds an id outside [0, vocab).
Status ValidatePrompts(const std::vector<std::vector<int32_t>>& prompts, const ModelConfig& config,
                       int64_t context_length);

// The KV-cache positions a job can use: the longest prompt plus
// `max_new_tokens`, at most `limit` (the model's max_position_embeddings or
// a smaller --context).
int64_t ContextLength(const std::vector<std::vector<int32_t>>& prompts, int64_t max_new_tokens,
                      int64_t limit);

}  // namespace inferno
