// FixedPrompts: infer's fixed prompts as the generator loop's sequence
// source (sequence i is prompt i, each with the same max_new_tokens and
// sampling), and the observer that keeps every sequence's generated tokens
// (passing every event on to another observer).
//
// A run that fails (a rank lost) can be continued: Continue() makes every
// sequence that had not ended start again, on the next run (over a new
// group of ranks), from its prompt plus the tokens it generated, with
// max_new_tokens less those, under its own id, so the observer sees one
// sequence whose tokens go on where they stopped (greedy output identical
// to an undisturbed run; sampled output continues validly but not
// identically: the sampler's random state starts again).
//
// Thread-safety: used from the generator's thread only (leader).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "runtime/generation.h"
#include "runtime/sampling_options.h"
#include "runtime/sequence_source.h"

namespace inferno {

class FixedPrompts : public SequenceSource, public GenerationObserver {
 public:
  // `prompts` must outlive this; `next` (may be null) gets every event.
  FixedPrompts(const std::vector<std::vector<int32_t>>& prompts, int64_t max_new_tokens,
               const SamplingOptions& sampling, GenerationObserver* next);

  std::optional<SequenceSpec> Next(std::chrono::steady_clock::time_point deadline) override;
  bool Exhausted() override;
  bool Cancelled(int64_t) override { return false; }

  void OnLogits(int64_t id, std::span<const float> logits) override;
  void OnToken(int64_t id, int32_t previous, int32_t token) override;
  void OnLogprobs(int64_t id, const TokenLogprobs& logprobs) override;
  void OnSequenceDone(int64_t id, FinishReason reason) override;

  // After a failed run: the sequences not ended start again on the next run
  // (see above). Returns how many.
  int64_t Continue();

  // Every sequence's generated tokens so far, by prompt.
  const std::vector<std::vector<int32_t>>& generated() const { return generated_; }

 private:
  const std::vector<std::vector<int32_t>>& prompts_;
  const int64_t max_new_tokens_;
  const SamplingOptions sampling_;
  GenerationObserver* const next_;
  std::vector<std::vector<int32_t>> generated_;
  std::vector<bool> ended_;
  std::vector<bool> started_;  // in this run
  size_t next_index_ = 0;      // the first prompt that may not have started in this run
};

}  // namespace inferno
