// Decode-step throughput of a stories15M-shaped f32 model (dim 288, hidden
// 768, 6 layers, 6 heads, vocab 32000, seq_len 256) on one rank: one token
// through every layer, the final norm, the classifier and a greedy pick —
// what infer does per generated token. Arg: worker threads.
//
//   bazel run --config=opt //engine:transformer_benchmark
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <benchmark/benchmark.h>

#include "engine/toy_model.h"
#include "engine/transformer.h"
#include "loader/checkpoint.h"
#include "loader/shard_plan.h"

namespace inferno {
namespace {

const Checkpoint& Stories15MShapedModel() {
  static const std::unique_ptr<Checkpoint> checkpoint = [] {
    const std::string folder =
        (std::filesystem::temp_directory_path() / "inferno_stories15m_shaped").string();
    ToyModelShape shape{.dim = 288,
                        .layers = 6,
                        .heads = 6,
                        .kv_heads = 6,
                        .vocab = 32000,
                        .seq_len = 256,
                        .tie_embeddings = true};
    Status written = WriteToyModel(folder, ToyModelConfig(shape), 1);
    CHECK(written.ok()) << written.error().message;
    auto opened = Checkpoint::Open(folder);
    CHECK(opened.ok()) << opened.error().message;
    return std::move(*opened);
  }();
  return *checkpoint;
}

void BM_DecodeStep(benchmark::State& state) {
  const Checkpoint& checkpoint = Stories15MShapedModel();
  const ModelConfig& config = checkpoint.config();
  Result<ShardPlan> plan = MakeShardPlan(config, 1, 1, std::nullopt);
  CHECK(plan.ok()) << plan.error().message;
  auto weights = LoadStageWeights(checkpoint, plan->ranks[0]);
  CHECK(weights.ok()) << weights.error().message;
  ThreadPool pool(static_cast<int>(state.range(0)));
  TransformerStage stage(config, std::move(*weights), 1, config.max_position_embeddings, pool);
  std::vector<float> x(config.hidden_size), normed(config.hidden_size), logits(config.vocab_size);
  int32_t token = 1;
  int64_t pos = 0;
  for (auto _ : state) {
    stage.Embed(std::span<const int32_t>(&token, 1), x);
    CHECK(stage.Forward(0, pos, x).ok());
    stage.FinalNorm(x, normed);
    stage.ClassifierSlice(normed, logits);
    token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    pos = (pos + 1) % config.max_position_embeddings;
  }
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DecodeStep)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace inferno

BENCHMARK_MAIN();
