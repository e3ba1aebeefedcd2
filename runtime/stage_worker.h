// StageWorker: one rank's compute on its pipeline stage, for the generator
// loop: the stage's layers over the positions of a step (batched prefill
// and decode), the embedding on the first stage, the rank's classifier rows;
// with the buffers those run in, allocated once, and the positions each
// KV-cache slot has run on this stage; with the prefix cache on, its
// blocks (kv_block_store.h) and what each slot's prefix plan still has to
// store in them.
//
// Contract: a step's positions of a slot continue where its last step ended
// (Prefill, Start, or a step at position 0 restarts the slot); the callers
// check what peers send before it reaches here. A slot's plan stores each of
// its blocks once the slot has run the block's last position. Errors are
// the stage's (a failed tensor-parallel all_reduce, naming the layer).
//
// Thread-safety: not thread-safe; called from the rank's generator thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/error.h"
#include "base/timeline.h"
#include "engine/transformer.h"
#include "runtime/kv_block_store.h"
#include "runtime/prefix_plan.h"

namespace inferno {

// The timeline's label of a step over `sequences` sequences, the first of
// which is `first`: the sequence, or -1 for a group.
inline int StepLabel(size_t sequences, int first) { return sequences == 1 ? first : -1; }

class StageWorker {
 public:
  // `stage`, `timeline` (which records the compute) and `blocks` (null when
  // the prefix cache is off) must outlive this. `max_draft`: the most
  // drafted tokens a sequence runs in a step (GeneratorSettings::speculate),
  // each of which may need its own classifier row. TEST ONLY: with
  // `test_only_hang_step`, the S-th Forward hangs forever (see
  // test_only_hang.h); `rank` is for its message.
  StageWorker(TransformerStage& stage, Timeline& timeline, KvBlockStore* blocks = nullptr, int rank = 0,
              std::optional<int64_t> test_only_hang_step = std::nullopt, int64_t max_draft = 0);

  TransformerStage& stage() { return stage_; }
  int64_t dim() const { return dim_; }
  // The most sequences in one step: a batched forward's positions, at most
  // one per slot.
  int64_t max_group() const { return max_group_; }
  // The most positions of one step the classifier runs over: one per
  // sequence, or with drafts 1 + max_draft, at most max_positions_per_call.
  int64_t max_classified() const { return max_classified_; }
  // The positions the slot's sequence has run on this stage.
  int64_t position(int slot) const { return positions_[slot]; }
  // Starts the slot's sequence anew (its next step is at position 0).
  void Restart(int slot) { positions_[slot] = 0; }
  // The slot's sequence continues at `position`: the positions it ran after
  // it held drafted tokens that were not kept, and their keys and values
  // are overwritten when run again. Preconditions: position <=
  // position(slot), and not before the end of the slot's prompt (whose
  // blocks its prefix plan may have stored).
  void CutBack(int slot, int64_t position);
  // Starts the slot's sequence anew with `plan`: restores its blocks into
  // positions [0, plan.first_position()), where its next step starts, and
  // keeps its blocks to store; an empty plan is Restart. Errors: Corruption
  // when the prefix cache is off, the plan's blocks pass the context, the
  // slot still has blocks to store, or the store's.
  Status Start(int slot, const PrefixPlan& plan);

  // The first `rows` rows (rows, dim) of the buffer a step's hidden states
  // are received into. Precondition: rows <= max_positions_per_call.
  std::span<float> hidden(int64_t rows) { return std::span<float>(hidden_).first(rows * dim_); }

  // Runs the stage's layers over x (rows, dim), the positions of `batch`
  // (see TransformerStage::Forward), advances each part's slot past them and
  // stores the blocks of its plan it has now run.
  Status Forward(std::span<const SlotPositions> batch, std::span<float> x);

  // First stage: embeds `tokens` (one per row of `batch`'s positions) into
  // the hidden buffer and runs the stage's layers; returns the hidden
  // states (rows, dim), valid until the next call.
  Result<std::span<float>> EmbedAndForward(std::span<const int32_t> tokens,
                                           std::span<const SlotPositions> batch);

  // First stage: prefills the rest of `prompt` in the slot, from the
  // position it is at (0 after Restart, the plan's first after Start), in
  // calls of at most max_positions_per_call positions; calls
  // `chunk_done(begin, x)` with each chunk's first position and hidden
  // states (n, dim), and stops at its first error. Precondition:
  // position(slot) < prompt.size().
  template <typename ChunkDone>
  Status Prefill(int slot, std::span<const int32_t> prompt, ChunkDone chunk_done) {
    for (size_t begin = static_cast<size_t>(position(slot)); begin < prompt.size();
         begin += stage_.max_positions_per_call()) {
      const size_t n = std::min<size_t>(stage_.max_positions_per_call(), prompt.size() - begin);
      const SlotPositions part{slot, static_cast<int64_t>(begin), static_cast<int64_t>(n)};
      Result<std::span<float>> x = EmbedAndForward(prompt.subspan(begin, n), std::span(&part, 1));
      if (!x) return x.error();
      if (Status done = chunk_done(static_cast<int64_t>(begin), *x); !done) return done;
    }
    return {};
  }

  // The first n rows (n, dim) of the classifier's input buffer, for the
  // final-normed hidden states of a step. Precondition: n <= max_classified().
  std::span<float> normed(int64_t n) { return std::span<float>(normed_).first(n * dim_); }

  // The logits (n, this rank's classifier rows) of this rank's rows for the
  // first n rows of normed(), in one pass over the rows; valid until the
  // next call. `label` names the timeline span.
  std::span<float> ClassifyOwnRows(int64_t n, int label);

 private:
  // A slot's blocks still to store: block i of `blocks` holds positions
  // [first + i * B, first + (i + 1) * B); `next` is the first not stored.
  struct PendingSaves {
    int64_t first = 0;
    std::vector<int32_t> blocks;
    size_t next = 0;
  };
  // Stores the slot's pending blocks it has run.
  Status SaveRunBlocks(int slot);

  TransformerStage& stage_;
  Timeline& timeline_;
  KvBlockStore* blocks_;  // null when the prefix cache is off
  const int64_t dim_;
  const int64_t max_group_;
  const int64_t max_classified_;
  const int rank_;
  const std::optional<int64_t> test_only_hang_step_;
  int64_t forward_passes_ = 0;
  std::vector<int64_t> positions_;   // (num_slots)
  std::vector<PendingSaves> saves_;  // (num_slots)
  std::vector<float> hidden_;        // (max_positions_per_call, dim)
  std::vector<float> normed_;        // (max_classified, dim) the classifier's input
  std::vector<float> own_logits_;    // (max_classified, this rank's classifier rows)
};

}  // namespace inferno
