#include "runtime/rank_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "loader/manifest.h"
#include "loader/routing_stats.h"
#include "loader/sha256.h"
#include "loader/sharded_checkpoint.h"
#include "loader/super_block_splits.h"
#include "model/llama_layout.h"

namespace inferno {

Result<ModelChoice> ParseModelChoice(const CommandLine& flags, const std::string& program) {
  ModelChoice choice;
  choice.fetch = flags.Has("fetch-weights");
  choice.cache = flags.Last("cache");
  if (choice.cache && !choice.fetch) {
    return Error::InvalidArgument("--cache keeps the weights a rank receives with --fetch-weights; add it");
  }
  if (choice.fetch && flags.Has("shards")) {
    return Error::InvalidArgument(
        "--fetch-weights sends shards of --model; with --shards every rank reads its own");
  }
  if (!choice.fetch && flags.Has("shards") == flags.Has("model")) {
    return Error::InvalidArgument("exactly one of --model and --shards is required (see " + program +
                                  " --help)");
  }
  choice.shards = flags.Has("shards");
  choice.model = flags.Last(choice.shards ? "shards" : "model").value_or("");
  if (choice.shards && flags.Has("layers")) {
    return Error::InvalidArgument("--layers cannot be combined with --shards: the shards fix the split");
  }
  if (flags.Has("tp") && flags.Has("ep")) {
    return Error::InvalidArgument(
        "--tp and --ep both given: --ep N splits attention over its N ranks as --tp N does; give one");
  }
  for (const auto& [name, out] :
       {std::pair{"tp", &choice.tp}, std::pair{"ep", &choice.ep}, std::pair{"pp", &choice.pp}}) {
    if (!flags.Has(name)) continue;
    Result<int64_t> value = flags.Int(name, 1, 1, 1 << 16);
    if (!value) return value.error();
    *out = static_cast<int>(*value);
  }
  if (const std::optional<std::string> layers = flags.Last("layers")) {
    Result<std::vector<int64_t>> counts = ParseIntList(*layers, "--layers");
    if (!counts) return counts.error();
    choice.layers_per_stage = *counts;
  }
  choice.experts_by_load = flags.Last("experts-by-load");
  if (choice.experts_by_load && (choice.shards || !choice.ep)) {
    return Error::InvalidArgument(
        choice.shards ? "--experts-by-load cannot be combined with --shards: the shards fix the "
                        "placement (give it to shard)"
                      : "--experts-by-load places experts under expert parallelism; add --ep");
  }
  Result<int64_t> replicas = flags.Int("expert-replicas", 0, 0, 1 << 16);
  if (!replicas) return replicas.error();
  choice.expert_replicas = static_cast<int>(*replicas);
  if (flags.Has("expert-replicas") && (choice.shards || !choice.ep)) {
    return Error::InvalidArgument(
        choice.shards ? "--expert-replicas cannot be combined with --shards: the shards fix the "
                        "placement (give it to shard)"
                      : "--expert-replicas copies experts under expert parallelism; add --ep");
  }
  return choice;
}

Status CheckFailoverChoice(const ModelChoice& choice) {
  if (choice.shards || choice.fetch || choice.layers_per_stage) {
    return Error::InvalidArgument(
        "--failover re-plans the grid over the model file on every rank: drop --shards, --fetch-weights "
        "and --layers");
  }
  return {};
}

Result<WeightPlacement> ParseWeightPlacement(const CommandLine& flags) {
  const std::string weights = flags.Last("weights").value_or("copy");
  if (weights != "copy" && weights != "mapped")
    return Error::InvalidArgument("--weights: '" + weights + "' is not copy or mapped");
  return weights == "mapped" ? WeightPlacement::kInPlace : WeightPlacement::kCopy;
}

std::string ShortDigest(std::string_view text) {
  Sha256 hash;
  hash.Update(std::as_bytes(std::span(text.data(), text.size())));
  return hash.HexDigest().substr(0, 16);
}

Result<std::pair<int, int>> JobGrid(const ModelChoice& choice, int world_size) {
  const int tp = choice.ep.value_or(choice.tp.value_or(1));
  const std::string tp_flag = choice.ep ? "--ep " : "--tp ";
  if (world_size % tp != 0) {
    return Error::InvalidArgument(tp_flag + std::to_string(tp) + " does not divide the job's " +
                                  std::to_string(world_size) + " ranks");
  }
  const int pp = choice.pp.value_or(world_size / tp);
  if (pp * tp != world_size) {
    return Error::InvalidArgument("--pp " + std::to_string(pp) + " x " + tp_flag + std::to_string(tp) +
                                  " is " + std::to_string(pp * tp) + " ranks, but the job has " +
                                  std::to_string(world_size));
  }
  return std::pair{pp, tp};
}

namespace {

// The plan of the job's `grid` (stages, ranks per stage) for `config`, as
// every rank makes it: from the model it opened, or from the shard it
// received.
Result<ShardPlan> JobPlan(const ModelConfig& config, const ModelChoice& choice, std::pair<int, int> grid,
                          int world_size) {
  std::optional<RoutingCounts> counts;
  if (choice.experts_by_load) {
    Result<RoutingCounts> read = ReadRoutingStats(*choice.experts_by_load, config);
    if (!read) return read.error().Prefixed("--experts-by-load: ");
    counts = std::move(*read);
  }
  Result<std::optional<ExpertPlacement>> placement =
      PlaceJobExperts(counts ? &*counts : nullptr, choice.expert_replicas, config, grid.second);
  if (!placement) return placement.error();
  Result<ShardPlan> plan = MakeShardPlan(config, grid.first, grid.second, choice.layers_per_stage,
                                         choice.ep.has_value(), *placement);
  if (!plan) return plan.error().Prefixed("world size " + std::to_string(world_size) + ": ");
  return plan;
}

}  // namespace

Result<ModelChoice> FailoverGrid(const ModelChoice& job, int world_size) {
  Result<std::unique_ptr<MappedCheckpoint>> checkpoint = MappedCheckpoint::Open(job.model);
  if (!checkpoint) return checkpoint.error().Prefixed("--model: ");
  const int wanted = job.ep.value_or(job.tp.value_or(1));
  std::optional<Error> refused;
  for (int tp = std::min(wanted, world_size); tp >= 1; --tp) {
    if (world_size % tp != 0) continue;
    ModelChoice choice = job;
    choice.pp.reset();
    if (choice.ep) {
      choice.ep = tp;
      if (tp == 1) choice.expert_replicas = 0;  // one rank holds every expert: nothing to copy
    } else if (choice.tp) {
      choice.tp = tp;
    }
    Result<ShardPlan> plan = JobPlan((*checkpoint)->config(), choice, {world_size / tp, tp}, world_size);
    Status whole = plan ? CheckSuperBlocksStayWhole(*plan, (*checkpoint)->tensors()) : Status(plan.error());
    if (whole) return choice;
    refused = whole.error();
  }
  return refused->Prefixed("--failover: no grid over " + std::to_string(world_size) + " ranks: ");
}

Result<RankModel> OpenRankModel(const ModelChoice& choice, int rank, int world_size) {
  if (choice.fetch && choice.model.empty()) {
    return Error::InvalidArgument("--fetch-weights: rank " + std::to_string(rank) +
                                  " sends the weights and needs --model");
  }
  if (choice.shards) {
    ShardJob job;
    job.rank = rank;
    job.world_size = world_size;
    job.tp = choice.ep ? choice.ep : choice.tp;
    if (choice.ep || choice.tp) job.expert_parallel = choice.ep.has_value();
    job.pp = choice.pp;
    auto opened = OpenRankShard(choice.model, job);
    if (!opened) return opened.error().Prefixed("--shards: ");
    return RankModel{std::move(opened->checkpoint), std::move(opened->manifest.plan),
                     ShortDigest(opened->manifest.source_fingerprint)};
  }
  Result<std::pair<int, int>> grid = JobGrid(choice, world_size);
  if (!grid) return grid.error();
  Result<std::unique_ptr<MappedCheckpoint>> checkpoint = MappedCheckpoint::Open(choice.model);
  if (!checkpoint) return checkpoint.error().Prefixed("--model: ");
  const ModelConfig& config = (*checkpoint)->config();
  Result<ShardPlan> plan = JobPlan(config, choice, *grid, world_size);
  if (!plan) return plan.error();
  if (Status whole = CheckSuperBlocksStayWhole(*plan, (*checkpoint)->tensors()); !whole) {
    return whole.error().Prefixed("--model: ");
  }
  std::vector<float> first_row(static_cast<size_t>(config.hidden_size));
  if (Status read = (*checkpoint)->ReadRowsF32(kEmbedTokensName, 0, 1, first_row); !read) {
    return read.error().Prefixed("--model: ");
  }
  const std::string_view row_bytes(reinterpret_cast<const char*>(first_row.data()),
                                   first_row.size() * sizeof(float));
  const MappedCheckpoint* mapped = checkpoint->get();
  return RankModel{std::move(*checkpoint), std::move(*plan), ShortDigest(row_bytes), mapped};
}

Result<RankModel> OpenReceivedRankModel(std::unique_ptr<MappedFile> file, const ModelChoice& choice, int rank,
                                        int world_size, std::string weights_digest) {
  Result<std::pair<int, int>> grid = JobGrid(choice, world_size);
  if (!grid) return grid.error();
  const auto plan_for = [&](const ModelConfig& config) { return JobPlan(config, choice, *grid, world_size); };
  Result<LoneShard> shard = OpenLoneShard(std::move(file), rank, plan_for);
  if (!shard) return shard.error().Prefixed("--fetch-weights: ");
  return RankModel{std::move(shard->checkpoint), std::move(shard->plan), std::move(weights_digest)};
}

std::string ModelFolder(const ModelChoice& choice) {
  namespace fs = std::filesystem;
  const fs::path path(choice.model);
  std::error_code ec;
  if (choice.model.empty()) return "";
  if (choice.shards || fs::is_directory(path, ec)) return choice.model;
  if (path.extension() == ".safetensors" || path.extension() == ".json") return path.parent_path().string();
  if (path.extension() == ".gguf") return choice.model;
  return "";
}

Result<std::optional<LoadedTokenizer>> LoadJobTokenizer(const std::optional<std::string>& flag,
                                                        const ModelChoice& choice, bool beside_model,
                                                        const ModelConfig& config) {
  Result<std::optional<LoadedTokenizer>> loaded =
      LoadTokenizer(flag, beside_model ? ModelFolder(choice) : "");
  if (!loaded) return loaded.error();
  if (!loaded->has_value() && config.vocab_size == ByteTokenizer::kVocabSize) {
    loaded = LoadTokenizer(std::string(kByteLevelTokenizer), "");
    if (!loaded) return loaded.error();
  }
  // A tokenizer may know more ids than the model only as special tokens
  // (Gemma 3's tokenizer.json has <image_soft_token> = 262144 beside its
  // models' 262144 ids): a prompt that holds one is refused where prompts
  // are checked (runtime/generation.h).
  const auto beyond_model_only_special = [&](const Tokenizer& tokenizer) {
    for (int32_t id = static_cast<int32_t>(config.vocab_size); id < tokenizer.vocab_size(); ++id) {
      if (!tokenizer.IsSpecial(id)) return false;
    }
    return true;
  };
  if (loaded->has_value() && !beyond_model_only_special(*(**loaded).tokenizer)) {
    return Error::InvalidArgument("the tokenizer " + (**loaded).source + " has " +
                                  std::to_string((**loaded).tokenizer->vocab_size()) +
                                  " tokens, more than the model's vocabulary of " +
                                  std::to_string(config.vocab_size) + "; pass the model's own --tokenizer");
  }
  return loaded;
}

Error NoTokenizerError(const ModelConfig& config) {
  return Error::InvalidArgument("no tokenizer.json beside the model, whose vocabulary has " +
                                std::to_string(config.vocab_size) + " tokens: pass --tokenizer");
}

Result<ChatTemplate> LoadChatTemplate(const std::optional<std::string>& flag,
                                      const LoadedTokenizer& tokenizer) {
  const std::optional<TokenizerChatConfig>& config = tokenizer.chat_config;
  std::string source;
  std::string where;
  if (flag) {
    std::ifstream file(*flag, std::ios::binary);
    if (!file) return Error::NotFound("--chat-template: cannot open '" + *flag + "'");
    source.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    where = *flag;
  } else if (config && config->chat_template) {
    source = *config->chat_template;
    where = "the chat_template of the tokenizer_config.json beside " + tokenizer.source;
  } else {
    return Error::InvalidArgument(tokenizer.source +
                                  " has no tokenizer_config.json with a chat_template beside it; pass "
                                  "--chat-template");
  }
  Result<ChatTemplate> chat = ChatTemplate::Parse(source);
  if (!chat) return chat.error().Prefixed(where + ": ");
  return chat;
}

Result<StageWeights> LoadRankWeights(const RankModel& model, int rank, WeightPlacement placement,
                                     const char* program) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point load_start = Clock::now();
  Clock::time_point next_report = load_start + std::chrono::seconds(2);
  const LoadProgress progress = [&](int64_t done, int64_t total) {
    const Clock::time_point now = Clock::now();
    if (now < next_report || done == total) return;
    next_report = now + std::chrono::seconds(2);
    std::fprintf(stderr, "%s: rank %d: loading weights: %lld of %lld layers (%.1f s)\n", program, rank,
                 static_cast<long long>(done), static_cast<long long>(total),
                 std::chrono::duration<double>(now - load_start).count());
  };
  auto weights =
      LoadStageWeights(*model.checkpoint, model.plan.ranks[static_cast<size_t>(rank)], placement, progress);
  if (!weights) return weights.error();
  if (const double seconds = std::chrono::duration<double>(Clock::now() - load_start).count(); seconds >= 2) {
    const StageWeights::Bytes bytes = weights->ByteSize();
    std::fprintf(stderr, "%s: rank %d: loaded %.2f GB of weights (%.2f GB in place in the file) in %.1f s\n",
                 program, rank, static_cast<double>(bytes.total) / 1e9,
                 static_cast<double>(bytes.in_place) / 1e9, seconds);
  }
  return weights;
}

}  // namespace inferno
