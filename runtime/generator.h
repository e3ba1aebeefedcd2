// Generator: the generator loop — prefill, then decode — run by every rank of
// a ProcessGroup over the plan's pp × tp grid (loader/shard_plan.h), each
// rank driving the TransformerStage of its part: its layers (or, under
// tensor parallelism, its heads and hidden units of them) with their KV
// caches, and its slice of the classifier.
//
// Layout: hidden states flow from the first stage (which embeds tokens) to
// the last (final norm, sampling); rank 0, the leader, is the last stage's
// tensor-parallel index 0 and prints. The classifier's rows are split across
// all ranks (see shard_plan.h), so the classifier, the biggest matrix of a
// small model, does not weigh on the last stage alone.
//
// The ranks of tensor-parallel index t, one per stage, form a ring (stage s
// -> s+1, the last -> the first), and every pipeline message travels along
// it, so each rank receives from one peer only, handles messages in the
// order they arrive, and blocks only when it has nothing to do:
// - layer work: hidden states go stage to stage;
// - classifier: the last stage sends the final-normed hidden state of a
//   sequence to the first; each rank appends the logits of its rows and
//   passes it on; back at the last stage, its own rows complete the ring's
//   rows, and it samples;
// - the sampled token goes from the last stage to the first.
// Sequences come from a SequenceSource (sequence_source.h), asked on the
// leader at each step of its loop (before each message it handles, or each
// round with one stage): which sequences start in the free KV-cache slots,
// which running ones are cancelled; the last stage sends a new sequence's
// prompt to the first (an admit message), which prefills it; with the
// prefix cache on (GeneratorSettings::prefix_cache_bytes) the leader's
// PrefixCacheIndex plans which of its blocks come from the cache, and a
// prefix message ahead of the admit carries the plan once around the ring,
// so every stage restores and stores the same blocks (prefix_cache_index.h). So sequences join a running
// pipeline at its next step and leave when they stop (infer's fixed prompts
// and serve's request queue are two sources of the one loop). While no
// sequence runs, the last stage sends a tick around the ring every
// kIdleTick (at most a quarter of the transport's timeout), so an idle
// pipeline neither times out nor misses a lost rank; while sequences run it
// sends one as often, behind the other messages, which carries every
// stage's time to the leader (GeneratorSettings::report_rank_times). One
// tick at most is on its way at a time. When the source is exhausted and
// nothing runs, an end message goes around and every rank returns.
// With tp > 1 the tp rings run side by side: every rank of a stage receives
// the same messages in the same order from its ring, so the collectives of
// the stage's group (two all_reduces per layer, see transformer.h; the
// sampling exchange) come in the same order on all of them. For that the
// last stage's ranks must start, cancel, tick and end at the same steps:
// at each step the leader sends the others its decisions
// (step_decisions.h), one scatter over the stage's group, and each of them
// follows them. The last
// stage's ranks agree on each token: greedy sampling exchanges each rank's
// best (value, id) — only that crosses the group —, top-k sampling each
// rank's top_k (value, id) pairs, and other sampling, or reporting logits,
// gathers the whole vector on each of them; the same Sampler draws the same
// token on each.
// Handling a message only sends (sends never wait for the peer), and each
// sequence has one message in flight at a time (plus its prompt chunks), so
// there is no deadlock and the queues stay small.
//
// Several sequences are micro-batched: every sequence has its own KV-cache
// slot on every stage and its own Sampler, and all sequences are in flight at
// once, so while one group of sequences is in one rank's layers, another is
// in the next rank's, a third in the classifier. Sequences past their prompt
// travel in groups: one message (a group, pipeline_protocol.h) carries the
// token, hidden state or logits of each sequence of a group, and each rank
// runs a group's step with one pass over its weights (one batched forward,
// one batched classifier pass; batched decode), which on a memory-bound
// model costs little more than one sequence's step. The last stage forms
// the groups when it sends the sampled tokens: it aims at W groups of about
// equal size (so every stage has one to work on), sending a group of that
// size at once and holding a smaller rest until the next group comes back
// to join it, while W groups are on their way. A prompt's prefill travels
// alone. A sequence's tokens and logits are bit for bit those of running it
// alone, on one rank or on a pipeline of W, in any group (each logit is one
// row's dot product, whichever rank computes it and whichever rows share
// the pass); with tp > 1 the sums of the all_reduces are ordered
// differently, so logits match within rounding.
//
// Wire protocol between ring neighbours: one message per step, a header
// naming the kind (hidden states, token, classify) and the sequence, then the
// payload, or a group of such messages of one kind; see pipeline_protocol.h.
//
// With one stage, every running sequence runs one token per round, the
// round in groups of up to max_positions_per_call sequences, each group
// one batched step; with speculative decoding (GeneratorSettings::speculate)
// also a draft of its next tokens, verified in the same step
// (one_stage_loop.h; with several stages, pipelined_loop.h: a drafted step
// travels alone, its positions through every stage and round the
// classifier ring).
//
// The pieces, one per file: scheduler.h (admission, sampling, stopping, on
// the last stage), token_groups.h (group forming), stage_worker.h (the
// stage's compute and buffers), pipeline_ring.h (the ring's wire I/O),
// tensor_parallel_agreement.h (what a stage's ranks exchange to stay in
// step), one_stage_loop.h and pipelined_loop.h (the loop for pp = 1 and for
// pp > 1); RunGenerator puts them together.
//
// Thread-safety: Generate and RunGenerator are called once per rank, from the
// rank's thread; the source and observer are called from that thread.
#pragma once

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "base/timeline.h"
#include "distributed/process_group.h"
#include "engine/transformer.h"
#include "loader/shard_plan.h"
#include "model/model_config.h"
#include "runtime/generation.h"
#include "runtime/sampler.h"
#include "runtime/sequence_source.h"
#include "runtime/tensor_parallel_group.h"

namespace inferno {

// Generate's options: the settings, and the same limit and sampling for
// every prompt.
struct GenerationOptions : GeneratorSettings {
  int64_t max_new_tokens = 256;
  SamplingOptions sampling;
};

// Runs the generator loop over the sequences of `source` until it is
// exhausted and every sequence has stopped: stops a sequence when it samples
// one of `settings.stop_ids`, after its max_new_tokens, when its KV cache
// (stage.context_length() positions) is full, or when the source cancels it.
// Up to stage.num_slots() sequences run at once. Every rank calls it with the
// same plan and settings; `source` is used (and must be non-null) on the
// leader only; `stage` must be rank group.rank()'s part of
// `plan`; `tensor_parallel` is its stage's group (MakeTensorParallelGroup),
// also the stage's AllReduce, when plan.tp > 1, else null.
// `observer` (may be null) is used on the leader only; `timeline` records
// this rank's time; every rank's timeline is gathered on the leader. Errors:
// a sequence the stage cannot hold, malformed messages and communication
// failures naming the peer and op (callers add their own rank).
Result<GenerationReport> RunGenerator(ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
                                      TensorParallelGroup* tensor_parallel, const GeneratorSettings& settings,
                                      SequenceSource* source, GenerationObserver* observer,
                                      Timeline& timeline);

// RunGenerator over the fixed `prompts` (sequence i is prompt i, every one
// with options.max_new_tokens and options.sampling), filling
// report.generated. Every rank calls it with the same prompts and options;
// with one stage and one slot the prompts run one after the other.
// `observer` (may be null) is used on the leader only; `timeline` records
// this rank's time; every rank's timeline is gathered on the leader. Errors:
// invalid prompts (on every rank), malformed messages and communication
// failures naming the peer and op (callers add their own rank).
Result<GenerationReport> Generate(ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
                                  TensorParallelGroup* tensor_parallel,
                                  const std::vector<std::vector<int32_t>>& prompts,
                                  const GenerationOptions& options, GenerationObserver* observer,
                                  Timeline& timeline);

}  // namespace inferno
