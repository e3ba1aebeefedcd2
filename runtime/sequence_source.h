// SequenceSource: where the generator loop (runtime/generator.h) takes its
// sequences from — infer's fixed prompts, serve's request queue — and the
// vocabulary both sides share: a sequence's spec and why it ended.
//
// The loop asks its source on the leader only (rank 0: the last stage's
// tensor-parallel index 0), once per step: which sequences start in the free
// KV-cache slots, which running ones are cancelled, whether more will come.
// Under tensor parallelism the leader passes these decisions to the other
// ranks of its stage (runtime/step_decisions.h), so the source itself never
// has to agree with anything.
//
// Thread-safety: the generator calls a source from its own thread only; a
// source fed by other threads (serve's HTTP handlers) locks for itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/prefix_plan.h"
#include "runtime/sampler.h"

namespace inferno {

// Why a sequence ended.
enum class FinishReason {
  kStopToken,  // it sampled one of the stop ids
  kLength,     // max_new_tokens, or its KV cache is full
  kCancelled,  // its source cancelled it
};

// A sequence to generate.
struct SequenceSpec {
  int64_t id = 0;               // the caller's name for it, given to the observer
  std::vector<int32_t> prompt;  // valid for the stage: see ValidatePrompts (generator.h)
  int64_t max_new_tokens = 256;
  SamplingOptions sampling;
  // Leader only, never sent to other ranks: limits the tokens its Sampler
  // may pick. Under tensor parallelism the leader alone samples such a
  // sequence and the last stage's other ranks take its tokens.
  std::shared_ptr<TokenConstraint> constraint = nullptr;
  // What the other ranks learn of a constraint (runtime/step_decisions.h
  // sets it from `constraint`): the leader picks the tokens.
  bool leader_picks = false;
  // Which of the prompt's blocks come from the prefix cache and which go
  // into it: the leader's PrefixCacheIndex (prefix_cache_index.h) sets it
  // at admission, and the step decisions carry it; a source leaves it
  // empty.
  PrefixPlan prefix = {};

  bool operator==(const SequenceSpec&) const = default;
};

class SequenceSource {
 public:
  virtual ~SequenceSource() = default;
  // The next sequence to start, waiting for one until `deadline` at most
  // (a past deadline: not at all); none at once when Exhausted().
  virtual std::optional<SequenceSpec> Next(std::chrono::steady_clock::time_point deadline) = 0;
  // Whether no sequence will come any more: the run ends when the running
  // ones have.
  virtual bool Exhausted() = 0;
  // Whether running sequence `id` is to stop (FinishReason::kCancelled):
  // asked once per step of the loop for every running sequence; a cancelled
  // one stops before its next token is sampled.
  virtual bool Cancelled(int64_t id) = 0;
};

}  // namespace inferno
