// RankSetup: what one rank of an infer or serve job prepares before it talks
// to the others, the same steps for both tools: its view of the model and
// the job's plan (rank_model.h), the job's tokenizer and stop ids, and the
// context limit. The tool checks its own inputs against these before it
// loads the stage's weights (LoadRankWeights). Every input error surfaces here, on every
// rank, before any networking, with the flag it concerns.
//
// Thread-safety: plain values and functions of the files they read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/model_config.h"
#include "runtime/rank_model.h"
#include "text/tokenizer_files.h"

namespace inferno {

struct RankSetupOptions {
  ModelChoice model;                     // --model or --shards, --tp, --pp, --layers
  std::optional<std::string> tokenizer;  // --tokenizer
  bool needs_tokenizer = true;           // text in or out: no tokenizer is an error
  std::optional<int64_t> context;        // --context
};

struct RankSetup {
  RankModel model;  // the checkpoint view, the plan, the weights digest
  ModelConfig config;
  LoadedTokenizer tokenizer;      // tokenizer is null when none was needed or found
  std::vector<int32_t> stop_ids;  // GenerationOptions::stop_ids
  int64_t context_limit = 0;      // --context, or the model's max_position_embeddings
};

// Rank `rank` of `world_size`: opens the model (OpenRankModel), the job's
// tokenizer (LoadJobTokenizer; read beside the model only when
// needs_tokenizer, and then required), the stop ids, and checks --context
// against the model's positions. Reads no weights.
Result<RankSetup> OpenRank(const RankSetupOptions& options, int rank, int world_size);
// The same over a model already opened (a fetching rank's, received from
// rank 0: OpenReceivedRankModel).
Result<RankSetup> OpenRank(const RankSetupOptions& options, RankModel model);

// The draft model of speculative decoding (--draft PATH), for rank 0.
struct DraftSetup {
  RankSetup setup;
  StageWeights weights;        // the whole model's
  int64_t context_length = 0;  // its KV-cache positions per sequence
};

// Opens the draft model (a checkpoint in any format --model takes) as a
// whole model on one rank, with the tokenizer beside it if there is one,
// and loads its weights (printing progress as LoadRankWeights does, for
// `program`); its context is `context_length` (the job's), or less when
// the draft has fewer positions. Refuses a draft whose vocabulary is not
// `target`'s, naming what differs: its size, and where both sides know
// them, the tokenizers' BOS and stop ids and the models' eos_token_id.
// Errors name --draft.
Result<DraftSetup> LoadDraftModel(const std::string& path, const RankSetup& target, int64_t context_length,
                                  WeightPlacement placement, const char* program);

// The fingerprint entries (see RendezvousOptions::fingerprint) every tool's
// ranks must agree on: the model's config, its weights, the plan and the
// tokenizer ("none" without one). A tool adds its own settings.
std::map<std::string, std::string> RankFingerprint(const RankSetup& setup);

}  // namespace inferno
