// shard: splits a checkpoint into one safetensors file per rank of a
// pipeline- (x tensor- or expert-) parallel job, plus manifest.json.
//
//   shard --model PATH --pp N [--tp M | --ep M [--experts-by-load STATS] [--expert-replicas R]] [--layers
//   a,b,...]
//         [--dtype T] --out DIR
//
// With --ep M each of a stage's M ranks holds whole experts of every
// mixture-of-experts layer, and its file only those (loader/shard_plan.h):
// contiguous runs, or with --experts-by-load each layer's experts placed so
// the busiest rank gets the least of the routing `infer --routing-stats`
// measured (loader/expert_placement.h); with --expert-replicas R also its
// copies of R of the others' experts.
//
// PATH is a safetensors file or folder (with config.json), a Hugging Face
// sharded folder, a GGUF file (whose embedded tokenizer infer reads with
// --tokenizer FILE.gguf), or a llama2.c .bin. Progress goes to stderr;
// re-running over a finished DIR verifies the files and skips them.
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>

#include "base/command_line.h"
#include "loader/mapped_checkpoint.h"
#include "loader/routing_stats.h"
#include "loader/shard_plan.h"
#include "loader/shard_progress.h"
#include "loader/shard_writer.h"
#include "loader/super_block_splits.h"

namespace inferno {
namespace {

int Fail(const Error& error) {
  std::fprintf(stderr, "shard: %s\n", error.ToString().c_str());
  return 1;
}

const CommandSpec kSpec{
    "shard",
    "--model PATH --pp N [--tp M | --ep M [--experts-by-load STATS] [--expert-replicas R]] [--layers "
    "a,b,...] [--dtype T] --out "
    "DIR",
    "Splits a checkpoint into one safetensors file per rank of a pipeline- (x tensor- or expert-) parallel "
    "job,\n"
    "plus manifest.json. PATH is a safetensors file or folder (with config.json), a Hugging Face sharded\n"
    "folder, a GGUF file, or a llama2.c .bin. Re-running over a finished DIR verifies the files and skips "
    "them.",
    {{"model", "PATH", "the checkpoint to split"},
     {"pp", "N", "pipeline stages"},
     {"tp", "M", "tensor-parallel ranks per stage (default 1)"},
     {"ep", "M",
      "expert-parallel ranks per stage: each holds whole experts of a mixture of experts, attention split "
      "by heads as under --tp M"},
     {"experts-by-load", "STATS",
      "with --ep: place each layer's experts so the busiest rank gets the least of the routing in STATS "
      "(a file infer --routing-stats wrote for this model), not in contiguous runs"},
     {"expert-replicas", "R",
      "with --ep: each rank also holds copies of R experts of the others' (the hottest by "
      "--experts-by-load's "
      "STATS, else spread), and a token's experts held twice run on the less busy holder (default 0)"},
     {"layers", "a,b,...", "layers per stage (default: balanced)"},
     {"dtype", "T",
      "convert every matrix to f32, bf16, f16, q8_0 or q4_0 while sharding (default: keep the source's "
      "types); norms stay as they are, and a matrix whose rows are not whole 32-element blocks keeps its "
      "type"},
     {"out", "DIR", "the shard folder to write"}},
    false,
    {"model", "pp", "out"}};

int Run(int argc, char** argv) {
  const CommandLine flags = ParseCommandLineOrExit(argc, argv, kSpec);
  const std::optional<std::string> model = flags.Last("model");
  const std::optional<std::string> out = flags.Last("out");
  Result<int64_t> pp = flags.Int("pp", 1, 1, 1 << 16);
  if (!pp) return Fail(pp.error());
  if (flags.Has("tp") && flags.Has("ep")) {
    return Fail(Error::InvalidArgument(
        "--tp and --ep both given: --ep M splits attention over its M ranks as --tp M does; give one"));
  }
  const bool expert_parallel = flags.Has("ep");
  Result<int64_t> tp = flags.Int(expert_parallel ? "ep" : "tp", 1, 1, 1 << 16);
  if (!tp) return Fail(tp.error());
  std::optional<std::vector<int64_t>> layers;
  if (std::optional<std::string> text = flags.Last("layers")) {
    Result<std::vector<int64_t>> parsed = ParseIntList(*text, "--layers");
    if (!parsed) return Fail(parsed.error());
    layers = *parsed;
  }

  std::optional<DType> dtype;
  if (std::optional<std::string> text = flags.Last("dtype")) {
    std::string upper = *text;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    dtype = ParseDType(upper);
    if (!dtype) {
      return Fail(
          Error::InvalidArgument("--dtype " + *text + ": not a type (choose f32, bf16, f16, q8_0 or q4_0)"));
    }
  }

  Result<std::unique_ptr<MappedCheckpoint>> checkpoint = MappedCheckpoint::Open(*model);
  if (!checkpoint) return Fail(checkpoint.error());
  const ModelConfig& config = (*checkpoint)->config();
  const std::optional<std::string> stats = flags.Last("experts-by-load");
  if ((stats || flags.Has("expert-replicas")) && !expert_parallel) {
    return Fail(Error::InvalidArgument(
        stats ? "--experts-by-load places experts under expert parallelism; add --ep"
              : "--expert-replicas copies experts under expert parallelism; add --ep"));
  }
  Result<int64_t> replicas = flags.Int("expert-replicas", 0, 0, 1 << 16);
  if (!replicas) return Fail(replicas.error());
  std::optional<RoutingCounts> counts;
  if (stats) {
    Result<RoutingCounts> read = ReadRoutingStats(*stats, config);
    if (!read) return Fail(read.error().Prefixed("--experts-by-load: "));
    counts = std::move(*read);
  }
  Result<std::optional<ExpertPlacement>> placement = PlaceJobExperts(
      counts ? &*counts : nullptr, static_cast<int>(*replicas), config, static_cast<int>(*tp));
  if (!placement) return Fail(placement.error());
  Result<ShardPlan> plan = MakeShardPlan(config, static_cast<int>(*pp), static_cast<int>(*tp), layers,
                                         expert_parallel, *placement);
  if (!plan) return Fail(plan.error());
  if (!dtype) {  // shards keep the checkpoint's types
    if (Status whole = CheckSuperBlocksStayWhole(*plan, (*checkpoint)->tensors()); !whole) {
      return Fail(whole.error());
    }
  }

  ShardProgressDisplay display(stderr, ::isatty(STDERR_FILENO) == 1);
  uint64_t last_done = 0, last_total = 0;
  const auto start = std::chrono::steady_clock::now();
  Result<ShardJobReport> report =
      WriteShards(**checkpoint, *model, *plan, dtype, *out, [&](uint64_t done, uint64_t total) {
        last_done = done;
        last_total = total;
        display.Update(done, total);
      });
  if (!report) return Fail(report.error());
  if (report->files_written > 0) display.Finish(last_done, last_total);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "shard: %s: %d files written (%llu bytes), %d verified and kept, in %.2f s\n",
               WorldLayoutText(*plan).c_str(), report->files_written,
               static_cast<unsigned long long>(report->bytes_written), report->files_verified, seconds);
  for (const RankShard& shard : plan->ranks) {
    std::string embedding = shard.embedding_rows.size() == 0
                                ? ""
                                : ", embedding rows [" + std::to_string(shard.embedding_rows.begin) + ", " +
                                      std::to_string(shard.embedding_rows.end) + ")";
    if (plan->expert_parallel) {
      embedding += ", " + ExpertsText(shard);
    }
    std::fprintf(stderr,
                 "shard:   rank %d: stage %d tp %d, layers [%lld, %lld), heads [%lld, %lld), classifier rows "
                 "[%lld, %lld)%s%s -> %s\n",
                 shard.rank, shard.stage, shard.tp_index, static_cast<long long>(shard.layers.begin),
                 static_cast<long long>(shard.layers.end), static_cast<long long>(shard.heads.begin),
                 static_cast<long long>(shard.heads.end), static_cast<long long>(shard.classifier_rows.begin),
                 static_cast<long long>(shard.classifier_rows.end), embedding.c_str(),
                 shard.has_final_norm ? ", final norm" : "",
                 report->manifest.files[static_cast<size_t>(shard.rank)].file.c_str());
  }
  for (int64_t layer = 0; counts && *placement && layer < config.num_hidden_layers; ++layer) {
    if (!config.IsSparseLayer(layer)) continue;
    std::fprintf(stderr,
                 "shard:   layer %lld: the busiest rank gets %.3f of the routing (contiguous: %.3f)\n",
                 static_cast<long long>(layer), BusiestRankShare(**placement, plan->tp, *counts, layer),
                 BusiestRankShare(ContiguousExperts(config, plan->tp), plan->tp, *counts, layer));
  }
  return 0;
}

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) { return inferno::Run(argc, argv); }
