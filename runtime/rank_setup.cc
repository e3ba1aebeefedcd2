#include "runtime/rank_setup.h"

#include <algorithm>
#include <utility>

#include "loader/manifest.h"
#include "runtime/draft_model.h"
#include "text/tokenizer_files.h"

namespace inferno {

Result<RankSetup> OpenRank(const RankSetupOptions& options, int rank, int world_size) {
  Result<RankModel> model = OpenRankModel(options.model, rank, world_size);
  if (!model) return model.error();
  return OpenRank(options, std::move(*model));
}

Result<RankSetup> OpenRank(const RankSetupOptions& options, RankModel model) {
  RankSetup setup;
  setup.config = model.checkpoint->config();
  setup.model = std::move(model);
  const ModelConfig& config = setup.config;

  // The tokenizer beside the model is read only when text is needed; one
  // named by --tokenizer always is.
  Result<std::optional<LoadedTokenizer>> loaded =
      LoadJobTokenizer(options.tokenizer, options.model, options.needs_tokenizer, config);
  if (!loaded) return loaded.error();
  if (!loaded->has_value() && options.needs_tokenizer) return NoTokenizerError(config);
  if (loaded->has_value()) setup.tokenizer = std::move(**loaded);
  Result<std::vector<int32_t>> stop_ids = StopIds(config, setup.tokenizer);
  if (!stop_ids) return stop_ids.error().Prefixed("--model: ");
  setup.stop_ids = std::move(*stop_ids);

  setup.context_limit = options.context.value_or(config.max_position_embeddings);
  if (setup.context_limit > config.max_position_embeddings) {
    return Error::InvalidArgument("--context " + std::to_string(setup.context_limit) +
                                  " exceeds the model's " + std::to_string(config.max_position_embeddings) +
                                  " positions");
  }
  return setup;
}

namespace {

std::string IdList(const auto& ids) {
  std::string text;
  for (const auto id : ids) text += (text.empty() ? "" : ",") + std::to_string(id);
  return "[" + text + "]";
}

}  // namespace

Result<DraftSetup> LoadDraftModel(const std::string& path, const RankSetup& target, int64_t context_length,
                                  WeightPlacement placement, const char* program) {
  RankSetupOptions options;
  options.model.model = path;
  options.needs_tokenizer = false;
  Result<RankSetup> draft = OpenRank(options, 0, 1);
  if (!draft) return draft.error().Prefixed("--draft: ");
  if (Status same = CheckDraftVocabulary(draft->config, target.config); !same) return same.error();
  Result<std::optional<LoadedTokenizer>> tokenizer =
      LoadJobTokenizer(std::nullopt, options.model, true, draft->config);
  if (!tokenizer) return tokenizer.error().Prefixed("--draft: ");
  const auto differ = [&](const std::string& what, const std::string& mine, const std::string& theirs) {
    return Error::InvalidArgument("--draft: the draft model's " + what + " are " + mine + ", the model's " +
                                  theirs + "; a draft must share the model's vocabulary");
  };
  if (tokenizer->has_value() && target.tokenizer.tokenizer) {
    const LoadedTokenizer& own = **tokenizer;
    if (own.bos_id != target.tokenizer.bos_id) {
      return differ("tokenizer's BOS ids", own.bos_id ? std::to_string(*own.bos_id) : "none",
                    target.tokenizer.bos_id ? std::to_string(*target.tokenizer.bos_id) : "none");
    }
    if (own.stop_ids != target.tokenizer.stop_ids) {
      return differ("tokenizer's stop ids", IdList(own.stop_ids), IdList(target.tokenizer.stop_ids));
    }
  }
  const std::vector<int64_t>& eos = draft->config.eos_token_ids;
  if (!eos.empty() && !target.config.eos_token_ids.empty() && eos != target.config.eos_token_ids) {
    return differ("eos_token_ids", IdList(eos), IdList(target.config.eos_token_ids));
  }
  DraftSetup loaded;
  loaded.context_length = std::min(context_length, draft->context_limit);
  if (Status fits = draft->config.CheckContextFits(loaded.context_length); !fits) {
    return fits.error().Prefixed("--draft: ");
  }
  Result<StageWeights> weights = LoadRankWeights(draft->model, 0, placement, program);
  if (!weights) return weights.error().Prefixed("--draft: ");
  loaded.setup = std::move(*draft);
  loaded.weights = std::move(*weights);
  return loaded;
}

std::map<std::string, std::string> RankFingerprint(const RankSetup& setup) {
  return {{"model", ShortDigest(ModelConfigToJson(setup.config))},
          {"weights", setup.model.weights_digest},
          {"plan", PlanDigest(setup.model.plan).substr(0, 16)},
          {"tokenizer", setup.tokenizer.tokenizer ? setup.tokenizer.sha256.substr(0, 16) : "none"}};
}

}  // namespace inferno
