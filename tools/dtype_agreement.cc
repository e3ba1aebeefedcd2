// dtype_agreement: how closely a model in another type (a 1-rank shard
// folder written by `shard --dtype`) follows the same model in its source
// type. Both run on one token stream — the reference's greedy
// continuation of the prompt — and at every generated step the tool
// compares the two next-token distributions: whether their top-1 tokens
// agree, and the KL divergence KL(reference || other) of their softmaxes.
// A report of quantization quality, not a test: nothing is asserted.
//
//   dtype_agreement --model PATH --shards DIR --prompt-ids IDS [--steps N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <glog/logging.h>

#include "base/command_line.h"
#include "base/thread_pool.h"
#include "engine/stage_weights.h"
#include "engine/transformer.h"
#include "loader/checkpoint.h"
#include "loader/shard_plan.h"
#include "loader/sharded_checkpoint.h"

namespace inferno {
namespace {

int Fail(const Error& error) {
  std::fprintf(stderr, "dtype_agreement: %s\n", error.ToString().c_str());
  return 1;
}

// One model on one rank: the token stream goes in, logits come out.
class Runner {
 public:
  static Result<std::unique_ptr<Runner>> Make(const Checkpoint& checkpoint, const RankShard& part,
                                              int64_t context, ThreadPool& pool) {
    Result<StageWeights> weights = LoadStageWeights(checkpoint, part);
    if (!weights) return weights.error();
    return std::unique_ptr<Runner>(new Runner(checkpoint.config(), std::move(*weights), context, pool));
  }

  // Feeds `token` at position `pos`; returns the next-token logits.
  const std::vector<float>& Step(int32_t token, int64_t pos) {
    stage_.Embed(std::span<const int32_t>(&token, 1), x_);
    CHECK(stage_.Forward(0, pos, x_).ok());
    stage_.FinalNorm(x_, normed_);
    stage_.ClassifierSlice(normed_, logits_);
    return logits_;
  }

 private:
  Runner(const ModelConfig& config, StageWeights weights, int64_t context, ThreadPool& pool)
      : stage_(config, std::move(weights), 1, context, pool),
        x_(config.hidden_size),
        normed_(config.hidden_size),
        logits_(config.vocab_size) {}

  TransformerStage stage_;
  std::vector<float> x_, normed_, logits_;
};

std::vector<double> Softmax(const std::vector<float>& logits) {
  double max = logits[0];
  for (float v : logits) max = std::max<double>(max, v);
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(logits[i] - max);
  for (double& v : p) v /= sum;
  return p;
}

int32_t ArgMax(const std::vector<float>& logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int Run(int argc, char** argv) {
  const CommandSpec spec{
      "dtype_agreement",
      "--model PATH --shards DIR --prompt-ids IDS [--steps N]",
      "Compares a 1-rank shard folder written by shard --dtype with its source model along the source's\n"
      "greedy continuation: top-1 agreement and mean KL(source || shards) per generated step.",
      {{"model", "PATH", "the source model"},
       {"shards", "DIR", "a 1-rank shard folder of the same model"},
       {"prompt-ids", "IDS", "the prompt, e.g. \"1 403 407\""},
       {"steps", "N", "generated steps compared (default 200)"}},
      false,
      {"model", "shards", "prompt-ids"}};
  const CommandLine flags = ParseCommandLineOrExit(argc, argv, spec);
  const std::optional<std::string> model = flags.Last("model");
  const std::optional<std::string> shards = flags.Last("shards");
  const std::optional<std::string> prompt_text = flags.Last("prompt-ids");
  Result<int64_t> steps = flags.Int("steps", 200, 1, 1 << 20);
  if (!steps) return Fail(steps.error());
  Result<std::vector<int64_t>> prompt = ParseIntList(*prompt_text, "--prompt-ids");
  if (!prompt) return Fail(prompt.error());
  if (prompt->empty()) return Fail(Error::InvalidArgument("--prompt-ids: no ids"));

  Result<std::unique_ptr<Checkpoint>> reference = Checkpoint::Open(*model);
  if (!reference) return Fail(reference.error());
  Result<RankShardCheckpoint> other = OpenRankShard(*shards, {});
  if (!other) return Fail(other.error());
  const ModelConfig& config = (*reference)->config();
  for (int64_t id : *prompt) {
    if (id < 0 || id >= config.vocab_size) {
      return Fail(Error::InvalidArgument("--prompt-ids: id " + std::to_string(id) +
                                         " is outside the vocabulary [0, " +
                                         std::to_string(config.vocab_size) + ")"));
    }
  }
  const int64_t context = static_cast<int64_t>(prompt->size()) + *steps;
  if (context > config.max_position_embeddings) {
    return Fail(Error::InvalidArgument("prompt + --steps exceed the model's " +
                                       std::to_string(config.max_position_embeddings) + " positions"));
  }
  Result<ShardPlan> plan = MakeShardPlan(config, 1, 1, std::nullopt);
  if (!plan) return Fail(plan.error());
  ThreadPool pool(1);
  Result<std::unique_ptr<Runner>> a = Runner::Make(**reference, plan->ranks[0], context, pool);
  if (!a) return Fail(a.error());
  Result<std::unique_ptr<Runner>> b = Runner::Make(*other->checkpoint, other->shard(0), context, pool);
  if (!b) return Fail(b.error());

  int64_t pos = 0, agree = 0;
  double kl_sum = 0, kl_max = 0;
  for (size_t i = 0; i + 1 < prompt->size(); ++i, ++pos) {
    (*a)->Step(static_cast<int32_t>((*prompt)[i]), pos);
    (*b)->Step(static_cast<int32_t>((*prompt)[i]), pos);
  }
  int32_t token = static_cast<int32_t>(prompt->back());
  for (int64_t step = 0; step < *steps; ++step, ++pos) {
    const std::vector<float>& la = (*a)->Step(token, pos);
    const std::vector<float>& lb = (*b)->Step(token, pos);
    const std::vector<double> pa = Softmax(la), pb = Softmax(lb);
    double kl = 0;
    for (size_t v = 0; v < pa.size(); ++v) {
      if (pa[v] > 0) kl += pa[v] * (std::log(pa[v]) - std::log(std::max(pb[v], 1e-300)));
    }
    kl_sum += kl;
    kl_max = std::max(kl_max, kl);
    token = ArgMax(la);
    agree += ArgMax(lb) == token;
  }
  std::printf("%s vs %s: %lld steps, top-1 agreement %.1f%%, mean KL %.3g nats (max %.3g)\n", shards->c_str(),
              model->c_str(), static_cast<long long>(*steps), 100.0 * agree / *steps, kl_sum / *steps,
              kl_max);
  return 0;
}

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) { return inferno::Run(argc, argv); }
