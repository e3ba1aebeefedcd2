#include "runtime/rank_setup.h"

#include <utility>

#include "loader/manifest.h"
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

std::map<std::string, std::string> RankFingerprint(const RankSetup& setup) {
  return {{"model", ShortDigest(ModelConfigToJson(setup.config))},
          {"weights", setup.model.weights_digest},
          {"plan", PlanDigest(setup.model.plan).substr(0, 16)},
          {"tokenizer", setup.tokenizer.tokenizer ? setup.tokenizer.sha256.substr(0, 16) : "none"}};
}

}  // namespace inferno
