#include "runtime/generator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/inproc/transport.h"
#include "distributed/run_ranks.h"
#include "engine/toy_model.h"
#include "loader/checkpoint.h"
#include "loader/shard_plan.h"
#include "runtime/kv_block_store.h"
#include "runtime/pipeline_protocol.h"

namespace inferno {
namespace {

// One connected in-process transport per rank of a world of `world` ranks.
std::vector<std::shared_ptr<Transport>> InProcessTransports(int world) {
  auto in_process = std::make_shared<InProcessWorld>(world, std::chrono::seconds(30));
  std::vector<std::shared_ptr<Transport>> transports;
  for (int rank = 0; rank < world; ++rank) transports.push_back(in_process->transport(rank));
  return transports;
}

// Records every logit vector and token the leader reports.
class RecordingObserver : public GenerationObserver {
 public:
  void OnLogits(int64_t sequence, std::span<const float> logits) override {
    logits_[sequence].insert(logits_[sequence].end(), logits.begin(), logits.end());
  }
  void OnToken(int64_t sequence, int32_t, int32_t token) override { tokens_[sequence].push_back(token); }
  void OnSequenceDone(int64_t sequence, FinishReason) override { ++done_[sequence]; }

  std::map<int, std::vector<float>> logits_;
  std::map<int, std::vector<int32_t>> tokens_;
  std::map<int, int> done_;
};

struct Outcome {
  std::map<int, std::vector<float>> logits;
  std::map<int, std::vector<int32_t>> tokens;
  std::map<int, int> done;
  int64_t generated = 0;
  size_t timelines = 0;
  int64_t sampling_steps = 0;
};

// Writes a toy model with 5 layers and a context of 80; `tied` shares the
// classifier with the token embedding.
std::string WriteToy(bool tied) {
  const std::string folder = std::string(std::getenv("TEST_TMPDIR")) + (tied ? "/toy_tied" : "/toy");
  ToyModelShape shape;
  shape.dim = 32;
  shape.layers = 5;
  shape.seq_len = 80;
  shape.tie_embeddings = tied;
  Status written = WriteToyModel(folder, ToyModelConfig(shape), 99);
  CHECK(written.ok()) << written.error().message;
  return folder;
}

const std::string& ToyModelPath(bool tied) {
  static const std::string separate = WriteToy(false);
  static const std::string shared = WriteToy(true);
  return tied ? shared : separate;
}

struct PipelineShape {
  bool tied = false;
  int tp = 1;  // the grid is (world / tp) x tp
  // Classifier rows per stage (tp 1); by default the plan's.
  std::optional<std::vector<int64_t>> rows_per_stage = std::nullopt;
  int slots = 0;  // KV-cache slots per stage; 0: one per prompt
};

// Gives the stages of a tp = 1 plan `rows_per_stage` classifier rows each,
// in stage order, instead of the plan's.
void SetClassifierRows(ShardPlan& plan, const ModelConfig& config,
                       const std::vector<int64_t>& rows_per_stage) {
  const bool tied = config.tie_word_embeddings;
  const std::string name = tied ? "model.embed_tokens.weight" : "lm_head.weight";
  for (RankShard& shard : plan.ranks) {
    shard.classifier_rows = ClassifierRowsOfStage(rows_per_stage, shard.stage);
    const bool in_embedding = shard.ClassifierRowsInEmbedding(tied);
    std::erase_if(shard.tensors, [&](const TensorSlice& s) { return s.name == name && !in_embedding; });
    if (shard.classifier_rows.size() > 0 && !in_embedding) {
      shard.tensors.push_back({name, 0, shard.classifier_rows.begin, shard.classifier_rows.end});
    }
  }
}

// Runs `run(group, plan, stage, its tensor-parallel group)` on `world` in-process ranks, each with its
// stage of the toy model (`slots` KV-cache slots), and returns each rank's
// result.
template <typename Run>
auto RunStages(int world, const PipelineShape& shape, int slots, Run run) {
  auto checkpoint = Checkpoint::Open(ToyModelPath(shape.tied));
  CHECK(checkpoint.ok()) << checkpoint.error().message;
  const ModelConfig& config = (*checkpoint)->config();
  auto plan = MakeShardPlan(config, world / shape.tp, shape.tp, std::nullopt);
  CHECK(plan.ok()) << plan.error().message;
  if (shape.rows_per_stage) SetClassifierRows(*plan, config, *shape.rows_per_stage);
  return RunRanks(InProcessTransports(world), [&](ProcessGroup& group) {
    ThreadPool pool(1);
    auto weights = LoadStageWeights(**checkpoint, plan->ranks[group.rank()]);
    CHECK(weights.ok()) << weights.error().message;
    auto tensor_parallel = MakeTensorParallelGroup(group, *plan);
    CHECK(tensor_parallel.ok()) << tensor_parallel.error().message;
    TensorParallelGroup* stage_group = *tensor_parallel ? &**tensor_parallel : nullptr;
    TransformerStage stage(config, std::move(*weights), slots, config.max_position_embeddings, pool,
                           stage_group);
    return run(group, *plan, stage, stage_group);
  });
}

// Runs Generate on `world` in-process ranks; returns the leader's outcome.
Outcome RunPipeline(int world, const std::vector<std::vector<int32_t>>& prompts,
                    const GenerationOptions& options, const PipelineShape& shape = {}) {
  const int slots = shape.slots > 0 ? shape.slots : static_cast<int>(prompts.size());
  std::vector<Outcome> results = RunStages(
      world, shape, slots,
      [&](ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
          TensorParallelGroup* stage_group) {
        RecordingObserver observer;
        Timeline timeline(false);
        auto report = Generate(group, plan, stage, stage_group, prompts, options, &observer, timeline);
        CHECK(report.ok()) << report.error().message;
        return Outcome{observer.logits_,         observer.tokens_,         observer.done_,
                       report->generated_tokens, report->timelines.size(), report->sampling_steps};
      });
  return results[0];
}

const std::vector<std::vector<int32_t>> kPrompts = {
    {1, 72, 101, 108, 108, 111},
    // Longer than one prefill call (64 positions).
    std::vector<int32_t>(70, 40),
    {1, 7},
};

class GeneratorTest : public ::testing::TestWithParam<int> {};

TEST_P(GeneratorTest, GreedyTokensAndLogitsEqualOneRankBitForBit) {
  GenerationOptions options;
  options.max_new_tokens = 8;
  const Outcome alone = RunPipeline(1, kPrompts, options);
  const Outcome pipelined = RunPipeline(GetParam(), kPrompts, options);
  EXPECT_EQ(pipelined.tokens, alone.tokens);
  EXPECT_EQ(pipelined.logits, alone.logits);
  EXPECT_EQ(pipelined.timelines, static_cast<size_t>(GetParam()));
  for (int sequence = 0; sequence < 3; ++sequence) EXPECT_EQ(pipelined.done.at(sequence), 1);
}

TEST_P(GeneratorTest, SeededSamplingEqualsOneRankAndEachSequenceEqualsRunningItAlone) {
  GenerationOptions options;
  options.max_new_tokens = 12;
  options.sampling = {.temperature = 0.9f, .top_k = 40, .top_p = 0.95f, .seed = 5};
  const Outcome together = RunPipeline(GetParam(), kPrompts, options);
  EXPECT_EQ(together.tokens, RunPipeline(1, kPrompts, options).tokens);
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    const Outcome alone = RunPipeline(GetParam(), {kPrompts[i]}, options);
    EXPECT_EQ(alone.tokens.at(0), together.tokens.at(static_cast<int>(i))) << "prompt " << i;
    EXPECT_EQ(alone.logits.at(0), together.logits.at(static_cast<int>(i))) << "prompt " << i;
  }
}

// With fewer KV-cache slots than prompts, a prompt waits for a slot and
// takes it over once the sequence in it stops: every sequence's tokens and
// logits are those of the run with a slot each.
TEST_P(GeneratorTest, SlotsAreReusedWhenFewerThanPrompts) {
  GenerationOptions options;
  options.max_new_tokens = 7;
  options.sampling = {.temperature = 0.9f, .top_k = 0, .top_p = 0.9f, .seed = 3};
  const Outcome each_own = RunPipeline(GetParam(), kPrompts, options);
  for (int slots : {1, 2}) {
    PipelineShape shape;
    shape.slots = slots;
    const Outcome shared = RunPipeline(GetParam(), kPrompts, options, shape);
    EXPECT_EQ(shared.tokens, each_own.tokens) << slots << " slots";
    EXPECT_EQ(shared.logits, each_own.logits) << slots << " slots";
    for (int sequence = 0; sequence < 3; ++sequence) EXPECT_EQ(shared.done.at(sequence), 1);
  }
}

// A stop id ends its sequence where it is sampled: the tokens before it are
// those of the run without stop ids, the stop token itself is not reported,
// and an id never sampled stops nothing.
TEST_P(GeneratorTest, SequenceEndsAtTheFirstSampledStopId) {
  GenerationOptions options;
  options.max_new_tokens = 8;
  const Outcome free_run = RunPipeline(GetParam(), kPrompts, options);
  const std::vector<int32_t>& first = free_run.tokens.at(0);
  ASSERT_EQ(first.size(), 8u);
  const int32_t stop = first[3];
  options.stop_ids = {-5, stop};
  const Outcome stopped = RunPipeline(GetParam(), kPrompts, options);
  const auto until_stop = std::find(first.begin(), first.end(), stop);
  const auto reported = stopped.tokens.find(0);
  EXPECT_EQ(reported == stopped.tokens.end() ? std::vector<int32_t>() : reported->second,
            std::vector<int32_t>(first.begin(), until_stop));
  EXPECT_EQ(stopped.done.at(0), 1);
}

// Classifier rows split across the stages in ways the balancer would not
// choose (even; stages holding none; all on the first stage, none on the
// leader), with the classifier tied to the embedding and not: every logit
// equals the 1-rank run's.
TEST_P(GeneratorTest, AnyClassifierSplitGivesOneRankLogitsBitForBit) {
  const int world = GetParam();
  GenerationOptions options;
  options.max_new_tokens = 6;
  options.sampling = {.temperature = 0.8f, .top_k = 0, .top_p = 0.9f, .seed = 11};
  constexpr int64_t kVocab = 259;
  std::vector<int64_t> even(world, kVocab / world);
  even[0] += kVocab % world;
  std::vector<int64_t> gap(world, 0);
  gap[0] = 100;
  gap[world - 1] += kVocab - 100;
  std::vector<int64_t> first_only(world, 0);
  first_only[0] = kVocab;
  for (bool tied : {false, true}) {
    const Outcome alone = RunPipeline(1, kPrompts, options, {.tied = tied, .rows_per_stage = std::nullopt});
    ASSERT_EQ(alone.logits.size(), kPrompts.size());
    for (const std::vector<int64_t>& rows : {even, gap, first_only}) {
      const Outcome split = RunPipeline(world, kPrompts, options, {.tied = tied, .rows_per_stage = rows});
      EXPECT_EQ(split.tokens, alone.tokens)
          << (tied ? "tied" : "separate") << ", rows of stage 0: " << rows[0];
      EXPECT_EQ(split.logits, alone.logits)
          << (tied ? "tied" : "separate") << ", rows of stage 0: " << rows[0];
    }
  }
}

// Eight sequences at once run in groups — one classifier pass samples the
// next token of several: the leader aims at W groups of 8 / W — and each
// sequence's tokens and logits are still bit for bit those of running it
// alone on one rank.
TEST_P(GeneratorTest, GroupedStepsGiveEachSequenceItsLogitsAloneBitForBit) {
  GenerationOptions options;
  options.max_new_tokens = 10;
  options.sampling = {.temperature = 0.9f, .top_k = 40, .top_p = 0.95f, .seed = 7};
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t i = 0; i < 8; ++i) prompts.push_back({1, 60 + i, 7 * i % 50 + 3});
  prompts[5] = std::vector<int32_t>(67, 41);  // a prefill of two calls among the decode steps
  const Outcome together = RunPipeline(GetParam(), prompts, options);
  EXPECT_EQ(together.generated, 80);
  // Each sequence's first token comes from its prefill, alone; the other 72
  // come in groups of at least half the aim on average.
  const int64_t aim = (8 + GetParam() - 1) / GetParam();
  EXPECT_LE((together.sampling_steps - 8) * aim, 2 * 72) << together.sampling_steps << " steps";
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Outcome alone = RunPipeline(1, {prompts[i]}, options);
    EXPECT_EQ(alone.sampling_steps, alone.generated);
    EXPECT_EQ(together.tokens.at(static_cast<int>(i)), alone.tokens.at(0)) << "prompt " << i;
    EXPECT_EQ(together.logits.at(static_cast<int>(i)), alone.logits.at(0)) << "prompt " << i;
  }
}

// A source and observer for the leader's reports of the ranks' times: one
// sequence of 60 tokens that takes at least 1.5 s (25 ms a token, longer
// than the 1 s between reports), then nothing, as an idle server's queue,
// until a report has come after the sequence ended (or 20 s have passed).
class ReportedTimes : public SequenceSource, public GenerationObserver {
 public:
  using Clock = std::chrono::steady_clock;

  std::optional<SequenceSpec> Next(Clock::time_point deadline) override {
    if (!given_) {
      given_ = true;
      return SequenceSpec{0, kPrompts[0], 60, {}};
    }
    if (!Exhausted()) std::this_thread::sleep_until(std::min(deadline, give_up_));
    return std::nullopt;
  }
  bool Exhausted() override { return !after_end.empty() || Clock::now() >= give_up_; }
  bool Cancelled(int64_t) override { return false; }

  void OnLogits(int64_t, std::span<const float>) override {}
  void OnToken(int64_t, int32_t, int32_t) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  void OnSequenceDone(int64_t, FinishReason) override { ended_ = true; }

  void Report(std::span<const RankTimes> ranks) {
    if (!given_) return;
    (ended_ ? after_end : while_running).assign(ranks.begin(), ranks.end());
  }

  std::vector<RankTimes> while_running;  // the last report while the sequence ran
  std::vector<RankTimes> after_end;      // the first report after it ended

 private:
  const Clock::time_point give_up_ = Clock::now() + std::chrono::seconds(20);
  bool given_ = false;
  bool ended_ = false;
};

// Runs ReportedTimes on `world` ranks of tp `tp` and checks the leader's
// reports: they name every rank, stage by stage, each stage's in
// tensor-parallel order, with the times each spent computing (and, with
// several ranks, waiting), both while a sequence runs and while the
// pipeline is idle, and never more than the rank's totals at the end.
void ExpectEveryRankReportedBusyAndIdle(int world, int tp) {
  struct RankOutcome {
    ReportedTimes reported;
    std::vector<int> grid_ranks;  // rank of each (stage, tensor-parallel index)
    std::vector<Timeline> timelines;
  };
  std::vector<std::shared_ptr<RankOutcome>> results =
      RunStages(world, {.tp = tp}, 1,
                [&](ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
                    TensorParallelGroup* stage_group) {
                  auto result = std::make_shared<RankOutcome>();
                  GeneratorSettings settings;
                  settings.report_rank_times = [&result](std::span<const RankTimes> ranks) {
                    result->reported.Report(ranks);
                  };
                  Timeline timeline(false);
                  auto report = RunGenerator(group, plan, stage, stage_group, settings, &result->reported,
                                             &result->reported, timeline);
                  CHECK(report.ok()) << report.error().message;
                  for (int s = 0; s < plan.pp; ++s) {
                    for (int t = 0; t < plan.tp; ++t) result->grid_ranks.push_back(plan.RankOf(s, t));
                  }
                  result->timelines = std::move(report->timelines);
                  return result;
                });
  const RankOutcome& leader = *results[0];
  for (const std::vector<RankTimes>* ranks : {&leader.reported.while_running, &leader.reported.after_end}) {
    const char* when = ranks == &leader.reported.after_end ? "idle" : "busy";
    ASSERT_EQ(ranks->size(), static_cast<size_t>(world)) << when;
    for (int i = 0; i < world; ++i) {
      const RankTimes& times = (*ranks)[i];
      EXPECT_EQ(times.rank, leader.grid_ranks[i]) << when << ", place " << i;
      const Timeline& end = leader.timelines.at(times.rank);
      EXPECT_GT(times.compute_seconds, 0) << when << ", rank " << times.rank;
      EXPECT_LE(times.compute_seconds, end.seconds(SpanKind::kCompute)) << when << ", rank " << times.rank;
      if (world > 1) {
        EXPECT_GT(times.wait_seconds, 0) << when << ", rank " << times.rank;
      }
      EXPECT_LE(times.wait_seconds, end.seconds(SpanKind::kWait)) << when << ", rank " << times.rank;
    }
  }
}

TEST_P(GeneratorTest, LeaderReportsEveryRanksComputeAndWaitBusyAndIdle) {
  ExpectEveryRankReportedBusyAndIdle(GetParam(), 1);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GeneratorTest, ::testing::Values(1, 2, 3, 4, 5));

// The largest |a - b| over the largest |a|, over every logit of every sequence.
float RelativeDifference(const std::map<int, std::vector<float>>& a,
                         const std::map<int, std::vector<float>>& b) {
  float largest = 0, difference = 0;
  for (const auto& [sequence, logits] : a) {
    const std::vector<float>& other = b.at(sequence);
    CHECK_EQ(logits.size(), other.size());
    for (size_t i = 0; i < logits.size(); ++i) {
      largest = std::max(largest, std::abs(logits[i]));
      difference = std::max(difference, std::abs(logits[i] - other[i]));
    }
  }
  return difference / largest;
}

// Grids of pp x tp with micro-batched prompts: greedy tokens equal one rank's
// (exchanging only each rank's best logit, and gathering the logits to
// report them), and the logits match within 1e-5.
TEST(Generator, TensorParallelGridsMatchOneRank) {
  GenerationOptions options;
  options.max_new_tokens = 8;
  const Outcome alone = RunPipeline(1, kPrompts, options);
  for (const auto& [pp, tp] : std::vector<std::pair<int, int>>{{1, 2}, {1, 3}, {2, 2}, {1, 4}}) {
    const Outcome grid = RunPipeline(pp * tp, kPrompts, options, {.tp = tp});
    EXPECT_EQ(grid.tokens, alone.tokens) << pp << "x" << tp;
    EXPECT_LE(RelativeDifference(alone.logits, grid.logits), 1e-5f) << pp << "x" << tp;
    EXPECT_EQ(grid.timelines, static_cast<size_t>(pp * tp));
    GenerationOptions best_only = options;
    best_only.report_logits = false;
    const Outcome exchanged = RunPipeline(pp * tp, kPrompts, best_only, {.tp = tp});
    EXPECT_EQ(exchanged.tokens, alone.tokens) << pp << "x" << tp << " without logits";
    EXPECT_TRUE(exchanged.logits.empty());
  }
}

// Prompts that share their first blocks, one after the other (one slot):
// with the prefix cache on, later ones restore the blocks earlier ones
// stored on every rank and prefill only the rest, and every token and logit
// is the run's without the cache, bit for bit, on every grid; a cache too
// small for them all evicts and stays within its budget.
TEST(Generator, PrefixCacheRestoresSharedBlocksAndChangesNoLogit) {
  std::vector<int32_t> first(40);
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int32_t>((i * 7 + 3) % 97);
  std::vector<int32_t> longer = first;
  for (int32_t i = 0; i < 20; ++i) longer.push_back(50 + i);
  std::vector<int32_t> forked(first.begin(), first.begin() + 20);
  forked.insert(forked.end(), 12, 9);
  std::vector<int32_t> past_one_call = longer;  // 70 positions: restored 48, then 22 run
  past_one_call.insert(past_one_call.end(), 10, 11);
  const std::vector<std::vector<int32_t>> prompts = {first, longer, longer, forked, past_one_call};
  GenerationOptions options;
  options.max_new_tokens = 6;
  const int64_t block = JobBytesPerBlock(
      RunStages(1, {}, 1, [](ProcessGroup&, const ShardPlan&, TransformerStage& stage, TensorParallelGroup*) {
        return stage.config();
      })[0]);
  for (const auto& [pp, tp] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {1, 2}, {2, 2}}) {
    const PipelineShape shape{.tp = tp, .slots = 1};
    const Outcome uncached = RunPipeline(pp * tp, prompts, options, shape);
    for (const int64_t budget_blocks : {64, 3}) {
      SCOPED_TRACE(std::to_string(pp) + "x" + std::to_string(tp) + ", " + std::to_string(budget_blocks) +
                   " blocks");
      PrefixCacheStats stats;
      GenerationOptions cached = options;
      cached.prefix_cache_bytes = budget_blocks * block + block / 2;
      cached.report_prefix_cache = [&stats](const PrefixCacheStats& now) {
        EXPECT_LE(now.bytes_in_use, now.capacity_bytes);
        stats = now;
      };
      const Outcome outcome = RunPipeline(pp * tp, prompts, cached, shape);
      EXPECT_EQ(outcome.tokens, uncached.tokens);
      EXPECT_EQ(outcome.logits, uncached.logits);
      EXPECT_EQ(stats.capacity_blocks, budget_blocks);
      EXPECT_EQ(stats.lookups, 5);
      if (budget_blocks == 64) {
        EXPECT_EQ(stats.hits, 4);
        EXPECT_EQ(stats.hit_positions, 32 + 48 + 16 + 48);
        EXPECT_EQ(stats.evictions, 0);
      } else {
        EXPECT_GT(stats.evictions, 0);
      }
    }
  }
}

// Under tensor parallelism every rank of every stage is reported, its
// stage's peers' times gathered on the stage's index 0.
TEST(Generator, TensorParallelLeaderReportsEveryRanksComputeAndWait) {
  for (const auto& [pp, tp] : std::vector<std::pair<int, int>>{{1, 2}, {2, 2}}) {
    SCOPED_TRACE(std::to_string(pp) + "x" + std::to_string(tp));
    ExpectEveryRankReportedBusyAndIdle(pp * tp, tp);
  }
}

// A source, on the leader only, that admits its sequences while others run:
// the first at once, sequence i once 3 × i tokens have come (or nothing
// runs); sequence `cancel` (if set) it cancels once 4 tokens of it have come.
// Sequences alternate greedy and seeded sampling.
class StaggeredSource : public SequenceSource, public GenerationObserver {
 public:
  using Clock = std::chrono::steady_clock;
  StaggeredSource(std::vector<std::vector<int32_t>> prompts, std::optional<int64_t> cancel)
      : prompts_(std::move(prompts)), cancel_(cancel) {}

  std::optional<SequenceSpec> Next(Clock::time_point) override {
    const int64_t i = next_;
    if (Exhausted() || (next_ > ended_ && generated_ < 3 * i)) return std::nullopt;
    ++next_;
    SamplingOptions sampling;
    if (i % 2 == 1) sampling = {.temperature = 0.9f, .top_k = 0, .top_p = 0.95f, .seed = 100 + uint64_t(i)};
    return SequenceSpec{i, prompts_[static_cast<size_t>(i)], 9, sampling};
  }
  bool Exhausted() override { return next_ == static_cast<int64_t>(prompts_.size()); }
  bool Cancelled(int64_t id) override { return id == cancel_ && tokens[id].size() >= 4; }

  void OnLogits(int64_t, std::span<const float>) override {}
  void OnToken(int64_t id, int32_t, int32_t token) override {
    tokens[id].push_back(token);
    ++generated_;
  }
  void OnSequenceDone(int64_t id, FinishReason reason) override {
    finish[id] = reason;
    ++ended_;
  }

  std::map<int64_t, std::vector<int32_t>> tokens;
  std::map<int64_t, FinishReason> finish;

 private:
  const std::vector<std::vector<int32_t>> prompts_;
  const std::optional<int64_t> cancel_;
  int64_t next_ = 0;
  int64_t generated_ = 0;
  int64_t ended_ = 0;
};

// Under tensor parallelism the leader alone asks the source (the other ranks
// get none) and its stage follows its decisions: sequences admitted while
// others run, into reused slots, and one cancelled midway, give the tokens
// of one rank, and the cancelled one stops after the token at which its
// source cancelled it.
TEST(Generator, TensorParallelRanksFollowTheLeadersAdmissionsAndCancellations) {
  std::vector<std::vector<int32_t>> prompts(kPrompts.begin(), kPrompts.end());
  prompts.push_back({1, 9, 9});
  prompts.push_back({1, 30, 31, 32});
  GeneratorSettings settings;
  settings.report_logits = false;
  // Runs the source on `world` ranks of tp `tp`, with 2 slots; returns the leader's.
  auto run = [&](int world, int tp, std::optional<int64_t> cancel) {
    std::vector<std::shared_ptr<StaggeredSource>> results = RunStages(
        world, {.tp = tp}, 2,
        [&](ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
            TensorParallelGroup* stage_group) {
          auto source = std::make_shared<StaggeredSource>(prompts, cancel);
          Timeline timeline(false);
          StaggeredSource* leader = group.is_leader() ? source.get() : nullptr;
          auto report = RunGenerator(group, plan, stage, stage_group, settings, leader, leader, timeline);
          CHECK(report.ok()) << report.error().message;
          return source;
        });
    return results[0];
  };
  const std::shared_ptr<StaggeredSource> alone = run(1, 1, std::nullopt);
  ASSERT_EQ(alone->tokens.size(), prompts.size());
  for (const auto& [pp, tp] : std::vector<std::pair<int, int>>{{1, 2}, {2, 2}}) {
    const std::shared_ptr<StaggeredSource> grid = run(pp * tp, tp, 2);
    for (int64_t id = 0; id < static_cast<int64_t>(prompts.size()); ++id) {
      const std::vector<int32_t>& full = alone->tokens.at(id);
      if (id != 2) {
        EXPECT_EQ(grid->tokens.at(id), full) << pp << "x" << tp << ", sequence " << id;
        EXPECT_NE(grid->finish.at(id), FinishReason::kCancelled) << pp << "x" << tp << ", sequence " << id;
        continue;
      }
      EXPECT_EQ(grid->finish.at(id), FinishReason::kCancelled) << pp << "x" << tp;
      EXPECT_EQ(grid->tokens.at(id), std::vector<int32_t>(full.begin(), full.begin() + 4)) << pp << "x" << tp;
    }
  }
}

TEST(Generator, StopsAtMaxNewTokensAndAtContextEnd) {
  GenerationOptions options;
  options.max_new_tokens = 3;
  EXPECT_EQ(RunPipeline(2, {{1, 2, 3}}, options).tokens.at(0).size(), 3u);
  options.max_new_tokens = 100;
  // Context 80: a 78-token prompt leaves room to feed 2 more tokens, the
  // third sampled token ends the sequence.
  const Outcome full = RunPipeline(2, {std::vector<int32_t>(78, 50)}, options);
  EXPECT_EQ(full.tokens.at(0).size(), 3u);
  options.max_new_tokens = 0;
  const Outcome none = RunPipeline(3, {{1, 2, 3}}, options);
  EXPECT_EQ(none.generated, 0);
  EXPECT_TRUE(none.logits.empty());
}

// Rank 0 (the leader) runs Generate; rank 1 plays its ring predecessor and
// sends `message` instead of what the first stage would. Returns the
// leader's error.
std::string LeaderErrorOn(const std::vector<std::byte>& message) {
  auto checkpoint = Checkpoint::Open(ToyModelPath(false));
  CHECK(checkpoint.ok()) << checkpoint.error().message;
  const ModelConfig& config = (*checkpoint)->config();
  auto plan = MakeShardPlan(config, 2, 1, std::nullopt);
  CHECK(plan.ok()) << plan.error().message;
  SetClassifierRows(*plan, config, {0, config.vocab_size});
  std::vector<std::string> errors = RunRanks(InProcessTransports(2), [&](ProcessGroup& group) {
    if (group.rank() == 1) {
      Status sent = group.send_bytes(0, kMessageTag, message);
      CHECK(sent.ok());
      return std::string();
    }
    ThreadPool pool(1);
    auto weights = LoadStageWeights(**checkpoint, plan->ranks[0]);
    CHECK(weights.ok()) << weights.error().message;
    TransformerStage stage(config, std::move(*weights), 1, config.max_position_embeddings, pool);
    Timeline timeline(false);
    auto report = Generate(group, *plan, stage, nullptr, {{1, 2, 3}}, GenerationOptions{}, nullptr, timeline);
    return report.ok() ? std::string("no error") : report.error().message;
  });
  return errors[0];
}

constexpr int32_t kHidden = static_cast<int32_t>(MessageKind::kHidden);
constexpr int32_t kToken = static_cast<int32_t>(MessageKind::kToken);
constexpr int32_t kClassify = static_cast<int32_t>(MessageKind::kClassify);
constexpr int32_t kControl = static_cast<int32_t>(MessageKind::kControl);

std::vector<std::byte> Bytes(std::vector<int32_t> header, size_t floats) {
  std::vector<std::byte> bytes(header.size() * sizeof(int32_t) + floats * sizeof(float));
  std::memcpy(bytes.data(), header.data(), header.size() * sizeof(int32_t));
  return bytes;
}

TEST(Generator, LeaderRejectsMalformedMessagesNamingItselfAndThePeer) {
  EXPECT_EQ(LeaderErrorOn(Bytes({kHidden}, 0)), "malformed message from rank 1: a message of 4 bytes");
  EXPECT_EQ(LeaderErrorOn(Bytes({7, 0, 0, 0}, 0)), "malformed message from rank 1: kind 7, sequence 0");
  EXPECT_EQ(LeaderErrorOn(Bytes({kHidden, 1, 0, 1}, 32)),
            "malformed message from rank 1: kind 0, sequence 1");
  EXPECT_EQ(LeaderErrorOn(Bytes({kToken, 0, 5, 0}, 0)),
            "malformed message from rank 1: token 5 at position 0 with 0 drafted tokens");
  EXPECT_EQ(LeaderErrorOn(Bytes({kHidden, 0, 2, 1}, 32)),
            "malformed message from rank 1: hidden states of sequence 0 at position 2, 1 positions");
  EXPECT_EQ(LeaderErrorOn(Bytes({kHidden, 0, 0, 3}, 31)),
            "malformed message from rank 1: recv hidden of 31 values, expected 96");
  EXPECT_EQ(LeaderErrorOn(Bytes({kClassify, 0, 5, 0}, 37)),
            "malformed message from rank 1: logits of 5 rows, expected 0");
  // A tick reaching the last of 2 stages carries the first stage's 2 f64.
  EXPECT_EQ(LeaderErrorOn(Bytes({kControl, 0, ControlMessage::kTick, 0}, 2)),
            "malformed message from rank 1: recv tick of 1 values, expected 2");
  EXPECT_EQ(LeaderErrorOn(Bytes({kControl, 0, ControlMessage::kEnd, 0}, 4)),
            "malformed message from rank 1: control signal 1 with 16 bytes");
}

TEST(ValidatePrompts, RejectsEmptyTooLongAndOutOfVocabulary) {
  const ModelConfig config = ToyModelConfig({});
  EXPECT_TRUE(ValidatePrompts({{1, 2, 3, 4}}, config, 4).ok());
  EXPECT_FALSE(ValidatePrompts({{}}, config, 4).ok());
  EXPECT_EQ(ValidatePrompts({{1, 2}, {1, 2, 3, 4, 5}}, config, 4).error().message,
            "prompt 1 has 5 tokens, longer than the context of 4 positions");
  EXPECT_EQ(ValidatePrompts({{1, 259}}, config, 4).error().message,
            "prompt 0: token id 259 is outside the vocabulary [0, 259)");
  EXPECT_FALSE(ValidatePrompts({{-1}}, config, 4).ok());
}

TEST(ContextLength, IsTheLongestPromptPlusNewTokensCappedByTheLimit) {
  EXPECT_EQ(ContextLength({{1, 2, 3}, {1}}, 10, 100), 13);
  EXPECT_EQ(ContextLength({{1, 2, 3}}, 200, 100), 100);
  EXPECT_EQ(ContextLength({{1, 2, 3}}, 0, 100), 4);
}

}  // namespace
}  // namespace inferno
