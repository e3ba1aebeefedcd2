// Generator: the generator loop — prefill, then decode — run pipeline-parallel
// by every rank of a ProcessGroup, each rank driving the TransformerStage of
// its own layers (with their KV caches).
//
// Pipeline layout (the loader's ShardPlan with tp = 1): rank r runs stage
// W-1-r, so hidden states flow from rank W-1 (the first stage, which embeds
// tokens) down to rank 0 (the leader: last layers, final norm, lm_head). The
// leader samples and sends each new token id back to rank W-1.
//
// Several prompts are micro-batched: every sequence has its own KV-cache slot
// on every stage and its own Sampler, and all sequences are in flight at
// once, so while the leader samples one sequence's token the other stages
// run other sequences. A sequence's tokens and logits are bit for bit those
// of running it alone, on one rank or on W.
//
// Wire protocol between neighbouring stages (tags below kTagReservedBase):
//   leader -> rank W-1, kTokenTag:   i32 [sequence, token], token -1 = stop
//   stage  -> next,     kHeaderTag:  i32 [sequence, pos, n], n = 0 = stop
//   stage  -> next,     kHiddenTag:  f32 (n, dim) hidden states of positions
//                                    [pos, pos + n), right after its header
//
// Thread-safety: Generate is called once per rank, from the rank's thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "distributed/process_group.h"
#include "engine/engine_error.h"
#include "engine/sampler.h"
#include "engine/timeline.h"
#include "engine/transformer.h"
#include "loader/model_config.h"

namespace inferno {

inline constexpr uint32_t kTokenTag = 101;
inline constexpr uint32_t kHeaderTag = 102;
inline constexpr uint32_t kHiddenTag = 103;

// What the leader's caller sees while generating. Called on the leader only.
class GenerationObserver {
 public:
  virtual ~GenerationObserver() = default;
  // The logits (vocab) of `sequence` from which its next token is sampled.
  virtual void OnLogits(int sequence, std::span<const float> logits) = 0;
  // A generated token of `sequence` (never the EOS or BOS that stops it),
  // following `previous` (the last prompt token for the first one).
  virtual void OnToken(int sequence, int32_t previous, int32_t token) = 0;
  virtual void OnSequenceDone(int sequence) = 0;
};

struct GenerationOptions {
  int64_t max_new_tokens = 256;
  SamplingOptions sampling;
};

// The leader's summary; on other ranks only `timelines` is empty and the
// counters are zero.
struct GenerationReport {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double time_to_first_token_seconds = 0;  // start to the first sampled token
  double decode_seconds = 0;               // first sampled token to the end
  double total_seconds = 0;
  std::vector<std::vector<int32_t>> generated;  // (sequences, its tokens)
  std::vector<Timeline> timelines;              // every rank's, in rank order
};

// Fails, naming the prompt (0-based) and the value, when a prompt is empty,
// longer than the context, or holds an id outside [0, vocab).
EngineStatus ValidatePrompts(const std::vector<std::vector<int32_t>>& prompts, const ModelConfig& config);

// Generates a continuation of every prompt: stops a sequence when it samples
// EOS or BOS, after `max_new_tokens`, or when the context is full. Every rank
// calls it with the same prompts and options; `stage` must have a slot per
// prompt (one suffices with one rank) and be this rank's stage of the plan
// above. `observer` (may be null) is used on the leader only; `timeline`
// records this rank's time; every rank's timeline is gathered on the leader. Errors: invalid prompts (on every rank), and
// communication failures naming the rank, peer and op.
EngineResult<GenerationReport> Generate(ProcessGroup& group, TransformerStage& stage,
                                        const std::vector<std::vector<int32_t>>& prompts,
                                        const GenerationOptions& options, GenerationObserver* observer,
                                        Timeline& timeline);

}  // namespace inferno
