// RankModel: what one rank of an infer or serve job opens before it talks to
// the others — its view of the checkpoint (the whole model, or its shard),
// the job's plan, its stage's weights, the tokenizer and chat template —
// shared by the tools' main()s so that both read models the same way.
//
// Thread-safety: pure functions of the files they read (weight loading
// prints progress lines to stderr).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/command_line.h"
#include "base/error.h"
#include "engine/stage_weights.h"
#include "loader/checkpoint.h"
#include "loader/mapped_checkpoint.h"
#include "loader/mapped_file.h"
#include "loader/shard_plan.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer_files.h"

namespace inferno {

// Where the model comes from and how the job splits it (the --model or
// --shards, --fetch-weights, --cache, --tp, --ep, --pp and --layers flags).
struct ModelChoice {
  std::string model;  // a checkpoint path, or with `shards` a shard folder; may be empty with `fetch`
  bool shards = false;
  // --fetch-weights: rank 0 reads `model`; every other rank receives its
  // shard from rank 0 (runtime/weight_transfer.h) and reads no file of it.
  bool fetch = false;
  std::optional<std::string> cache;  // --cache DIR: where a fetching rank keeps what it received
  std::optional<int> tp;
  // --ep N: stages of N ranks holding whole experts (attention split by heads
  // as under --tp N); at most one of tp and ep is set.
  std::optional<int> ep;
  std::optional<int> pp;
  std::optional<std::vector<int64_t>> layers_per_stage;
  // --experts-by-load FILE (with --ep, without --shards): experts placed by
  // the routing stats in FILE (loader/routing_stats.h) instead of in runs.
  std::optional<std::string> experts_by_load;
  // --expert-replicas R (with --ep, without --shards): each rank also holds
  // copies of R experts of the others' (loader/expert_placement.h).
  int expert_replicas = 0;
};

// The --model or --shards (exactly one; or with --fetch-weights --model or
// neither), --fetch-weights, --cache (only with --fetch-weights), --tp or
// --ep (not both), --pp, --layers, --experts-by-load and --expert-replicas
// flags (not --layers, --experts-by-load or --expert-replicas with
// --shards, whose manifest fixes the split; the last two only with --ep);
// `program` names the tool in the error for a missing model.
Result<ModelChoice> ParseModelChoice(const CommandLine& flags, const std::string& program);

// --failover (infer's and serve's) re-plans the job's grid over the model
// file on every rank (FailoverGrid), so it takes --model with --tp, --ep and
// --pp: fails naming the flags it cannot re-plan (--shards, --fetch-weights,
// --layers).
Status CheckFailoverChoice(const ModelChoice& choice);

// The grid of a --failover job of flags `job` (--model only, see
// CheckFailoverChoice) over the `world_size` members of a generation after
// a regroup: --tp (or --ep) T is kept when it divides world_size and the
// model takes it (MakeShardPlan accepts it, and every quantized super-block
// stays whole), else the largest T' < T that does, down to 1 (a pure
// pipeline); --pp becomes world_size / T'. Experts are placed over T' by the
// job's rule (contiguous runs, or --experts-by-load's stats, with
// --expert-replicas' copies: a T' > 1 the copies do not fit is passed over;
// at T' = 1 there are none). With a
// standby in every lost place the world size is the job's, and so is the
// grid. A function of the model file, the flags and world_size, so every
// member computes the same one. Errors: the model cannot be opened; no T'
// works (the error of T' = 1, e.g. more stages than layers).
Result<ModelChoice> FailoverGrid(const ModelChoice& job, int world_size);

// The --weights copy|mapped flag (default copy).
Result<WeightPlacement> ParseWeightPlacement(const CommandLine& flags);

struct RankModel {
  std::unique_ptr<Checkpoint> checkpoint;
  ShardPlan plan;
  // Tells the weights apart where the config cannot: with --shards the
  // manifest's fingerprint of the source checkpoint, else the embedding's
  // first row.
  std::string weights_digest;
  // With --model: `checkpoint` as the mapped file it is, from which the
  // leader of a --fetch-weights job streams the other ranks' shards; null
  // otherwise.
  const MappedCheckpoint* mapped_model = nullptr;
};

// The first 16 hex digits of the SHA-256 of `text`: enough to tell apart
// what ranks load, short enough for a one-line error.
std::string ShortDigest(std::string_view text);

// The grid of a job of `world_size` ranks: --tp or --ep (default 1) and --pp
// (default world_size / tp), which must multiply to world_size.
Result<std::pair<int, int>> JobGrid(const ModelChoice& choice, int world_size);

// Rank `rank`'s view of the model and the job's plan. Errors name the flag.
// With choice.fetch, for rank 0 only (which must have --model).
Result<RankModel> OpenRankModel(const ModelChoice& choice, int rank, int world_size);

// A fetching rank's view: its shard as received from rank 0 (`file`, see
// runtime/weight_transfer.h), the plan its own --tp, --pp and --layers give
// for the config the shard carries (which must be the one the shard was
// cut for: the rank's flags are rank 0's), and `weights_digest`, rank 0's
// (the bytes are rank 0's, by their content hash).
Result<RankModel> OpenReceivedRankModel(std::unique_ptr<MappedFile> file, const ModelChoice& choice, int rank,
                                        int world_size, std::string weights_digest);

// Where the default --tokenizer comes from (see LoadTokenizer): the model
// folder or the folder of its safetensors file or index, the shard folder,
// whose tokenizer.json it is; a GGUF file, which embeds it; none for a
// llama2.c file.
std::string ModelFolder(const ModelChoice& choice);

// The job's tokenizer: --tokenizer `flag` if given, else (with
// `beside_model`) the one in ModelFolder(choice), else the byte-level one for
// a model of its 259-token vocabulary; none if none of these. Fails when it
// has more tokens than the model.
Result<std::optional<LoadedTokenizer>> LoadJobTokenizer(const std::optional<std::string>& flag,
                                                        const ModelChoice& choice, bool beside_model,
                                                        const ModelConfig& config);

// The error for a job that needs text but has no tokenizer.
Error NoTokenizerError(const ModelConfig& config);

// The chat template: the file `flag` (--chat-template) if given, else the
// chat_template of the tokenizer's tokenizer_config.json. Errors name where
// the template came from, or say to pass --chat-template.
Result<ChatTemplate> LoadChatTemplate(const std::optional<std::string>& flag,
                                      const LoadedTokenizer& tokenizer);

// Loads rank `rank`'s weights of `model`, printing "<program>: rank R:
// loading weights: ..." every 2 s while it takes longer than that.
Result<StageWeights> LoadRankWeights(const RankModel& model, int rank, WeightPlacement placement,
                                     const char* program);

}  // namespace inferno
