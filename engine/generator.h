// Generator: the generator loop — prefill, then decode — run pipeline-parallel
// by every rank of a ProcessGroup, each rank driving the TransformerStage of
// its own layers (with their KV caches) and its slice of the classifier.
//
// Pipeline layout (the loader's ShardPlan with tp = 1): rank r runs stage
// W-1-r, so hidden states flow from rank W-1 (the first stage, which embeds
// tokens) down to rank 0 (the leader: last layers, final norm, sampling).
// The classifier's rows are split across all ranks in stage order (rank W-1
// holds the first rows, the leader the last; see pipeline_split.h), so the
// classifier, the biggest matrix of a small model, does not weigh on the
// leader alone.
//
// The ranks form a ring, r -> r-1 and 0 -> W-1, and every message travels
// along it, so each rank receives from one peer only, handles messages in
// the order they arrive, and blocks only when it has nothing to do:
// - layer work: hidden states go stage to stage, rank r -> r-1;
// - classifier: the leader sends the final-normed hidden state of a sequence
//   to rank W-1; each rank appends the logits of its rows and passes it on;
//   back at the leader, the logits of the leader's own rows complete the
//   vector, and the leader samples;
// - the sampled token goes from the leader to rank W-1.
// Handling a message only sends (sends never wait for the peer), and each
// sequence has one message in flight at a time (plus its prompt chunks), so
// there is no deadlock and the queues stay small.
//
// Several prompts are micro-batched: every sequence has its own KV-cache slot
// on every stage and its own Sampler, and all sequences are in flight at
// once, so while one sequence is in one rank's layers, another is in the
// next rank's, a third in the classifier. A sequence's tokens and logits are
// bit for bit those of running it alone, on one rank or on W (each logit is
// one row's dot product, whichever rank computes it).
//
// Wire protocol between ring neighbours: one message per step, a header
// naming the kind (hidden states, token, classify) and the sequence, then the
// payload; see pipeline_protocol.h.
//
// Thread-safety: Generate is called once per rank, from the rank's thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/error.h"
#include "distributed/process_group.h"
#include "engine/sampler.h"
#include "engine/timeline.h"
#include "engine/transformer.h"
#include "loader/model_config.h"

namespace inferno {

// What the leader's caller sees while generating. Called on the leader only.
class GenerationObserver {
 public:
  virtual ~GenerationObserver() = default;
  // The logits (vocab) of `sequence` from which its next token is sampled.
  virtual void OnLogits(int sequence, std::span<const float> logits) = 0;
  // A generated token of `sequence` (never the stop token that ends it),
  // following `previous` (the last prompt token for the first one).
  virtual void OnToken(int sequence, int32_t previous, int32_t token) = 0;
  virtual void OnSequenceDone(int sequence) = 0;
};

struct GenerationOptions {
  int64_t max_new_tokens = 256;
  SamplingOptions sampling;
  // A sequence ends when it samples one of these (the model's EOS ids; see
  // engine/stop_tokens.h); it is neither reported nor counted.
  std::vector<int32_t> stop_ids;
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
// longer than `context_length`, or holds an id outside [0, vocab).
Status ValidatePrompts(const std::vector<std::vector<int32_t>>& prompts, const ModelConfig& config,
                       int64_t context_length);

// The KV-cache positions a job can use: the longest prompt plus
// `max_new_tokens`, at most `limit` (the model's max_position_embeddings or
// a smaller --context).
int64_t ContextLength(const std::vector<std::vector<int32_t>>& prompts, int64_t max_new_tokens,
                      int64_t limit);

// Generates a continuation of every prompt: stops a sequence when it samples
// one of `options.stop_ids`, after `max_new_tokens`, or when its KV cache
// (stage.context_length() positions) is full. Every rank
// calls it with the same prompts and options; `stage` must have a slot per
// prompt (one suffices with one rank) and be this rank's stage of the plan
// above, holding its classifier rows (all of them with one rank).
// `observer` (may be null) is used on the leader only; `timeline` records
// this rank's time; every rank's timeline is gathered on the leader. Errors:
// invalid prompts (on every rank), malformed messages and communication
// failures naming the peer and op (callers add their own rank).
Result<GenerationReport> Generate(ProcessGroup& group, TransformerStage& stage,
                                  const std::vector<std::vector<int32_t>>& prompts,
                                  const GenerationOptions& options, GenerationObserver* observer,
                                  Timeline& timeline);

}  // namespace inferno
