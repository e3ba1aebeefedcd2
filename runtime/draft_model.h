// DraftModel: the draft of speculative decoding from a small model that
// shares the target's vocabulary (--draft), run on the leader beside the
// target's last stage (generator.h). Each KV-cache slot of the target has
// its own slot here, with its own cache and, when sampling, its own random
// stream.
//
// Staying in step: Start runs a sequence's prompt (but its last token) when
// the target admits it. Draft gets the sequence's tokens so far (prompt and
// every token kept); it keeps the longest prefix of them its cache holds —
// the drafted tokens the target did not keep, and anything after, are cut
// off (StageWorker::CutBack) — runs the rest in one batched step (the
// token the target corrected or sampled, and any kept drafts not yet run
// here), then proposes k tokens one position at a time
// (Sampler::Propose), each run to propose the next. So the state depends
// only on the tokens given, and a sequence that skipped drafting catches
// up at its next draft.
//
// With temperature 0 the draft is the draft model's argmax at each step
// and the target's greedy pick decides (exact); otherwise each drafted
// token is drawn from q, the draft model's softmax under the sequence's
// temperature, top_k and top_p (no penalties, no constraint), and its q
// goes with it to the target's sampler (Sampler::Sample), whose rule keeps
// the target's distribution whatever q is.
//
// Thread-safety: not thread-safe; called from the leader's generator thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/error.h"
#include "base/timeline.h"
#include "engine/transformer.h"
#include "model/model_config.h"
#include "runtime/sampler.h"
#include "runtime/stage_worker.h"

namespace inferno {

// Fails, naming both sizes, unless `draft`'s vocabulary has `target`'s size.
Status CheckDraftVocabulary(const ModelConfig& draft, const ModelConfig& target);

class DraftModel {
 public:
  // `stage`: the whole draft model (one stage on one rank, no tensor
  // parallelism) with at least the target's slots; `timeline` records its
  // compute. Both must outlive this.
  DraftModel(TransformerStage& stage, Timeline& timeline);

  int num_slots() const { return stage_.num_slots(); }
  const ModelConfig& config() const { return stage_.config(); }

  // Starts `slot` anew for a sequence of `prompt` whose tokens are sampled
  // with `sampling` (its seed is turned into the draft's own), running all
  // the prompt's tokens but the last. Errors: the stage's; a prompt longer
  // than the draft's context drafts nothing (not an error).
  Status Start(int slot, std::span<const int32_t> prompt, const SamplingOptions& sampling);

  // Fills `draft` (cleared first) with up to `k` tokens to follow `tokens`
  // (the sequence's prompt and every token kept since Start, the last one
  // not yet run by the target), fewer when the draft's context ends; when
  // sampling, `probs` gets each drafted token's q (draft.size(), vocab),
  // else it is cleared. Errors: the stage's.
  Status Draft(int slot, std::span<const int32_t> tokens, int64_t k, std::vector<int32_t>& draft,
               std::vector<float>& probs);

 private:
  // The logits (vocab) of the slot's last run position, whose hidden state
  // is `hidden` (dim); valid until the next step.
  std::span<float> Logits(int slot, std::span<const float> hidden);

  TransformerStage& stage_;
  StageWorker worker_;
  // (num_slots) the tokens whose positions the slot's cache holds, and the
  // sequence's proposing sampler.
  std::vector<std::vector<int32_t>> run_;
  std::vector<std::optional<Sampler>> samplers_;
};

}  // namespace inferno
