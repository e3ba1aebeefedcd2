#include "runtime/generator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include <glog/logging.h>

#include "base/progress.h"
#include "runtime/draft_model.h"
#include "runtime/fixed_prompts.h"
#include "runtime/kv_block_store.h"
#include "runtime/one_stage_loop.h"
#include "runtime/pipeline_ring.h"
#include "runtime/pipelined_loop.h"
#include "runtime/prefix_cache_index.h"
#include "runtime/scheduler.h"
#include "runtime/stage_worker.h"
#include "runtime/tensor_parallel_agreement.h"
#include "runtime/test_only_hang.h"

namespace inferno {
namespace {

// The longest an idle pipeline waits for a sequence before it checks the
// ring with a tick (a quarter of the transport's timeout if that is less).
constexpr std::chrono::milliseconds kIdleTick{1000};

}  // namespace

Result<GenerationReport> RunGenerator(ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
                                      TensorParallelGroup* tensor_parallel, const GeneratorSettings& settings,
                                      SequenceSource* source, GenerationObserver* observer,
                                      Timeline& timeline) {
  CHECK_EQ(group.world_size(), plan.world_size());
  CHECK(stage.part() == plan.ranks[static_cast<size_t>(group.rank())]) << "rank " << group.rank();
  CHECK_EQ(tensor_parallel != nullptr, plan.tp > 1);
  CHECK(stage.tensor_parallel() == tensor_parallel) << "the stage sums over another group";
  CHECK(!group.is_leader() || source != nullptr) << "the leader needs a sequence source";
  const std::chrono::milliseconds idle_tick =
      std::min<std::chrono::milliseconds>(kIdleTick, group.transport()->timeout() / 4);
  Result<std::optional<int64_t>> test_only_hang_step =
      TestOnlyHangStep([](const char* name) { return std::getenv(name); }, group.rank());
  if (!test_only_hang_step) return test_only_hang_step.error();
  const int64_t prefix_blocks = PrefixCacheBlocks(stage.config(), settings.prefix_cache_bytes);
  std::optional<KvBlockStore> blocks;
  std::optional<PrefixCacheIndex> prefix_cache;
  if (prefix_blocks > 0) {
    if (Status supported = KvBlockStore::CheckSupports(stage); !supported) return supported.error();
    blocks.emplace(stage, prefix_blocks);
    if (group.is_leader()) prefix_cache.emplace(prefix_blocks, JobBytesPerBlock(stage.config()));
  }
  if (settings.speculate < 0) {
    return Error::InvalidArgument("speculative decoding of " + std::to_string(settings.speculate) +
                                  " drafted tokens: it takes 0 or more");
  }
  std::optional<DraftModel> draft;
  if (settings.draft_model && settings.speculate == 0) {
    return Error::InvalidArgument("a draft model drafts with speculative decoding only (--speculate K)");
  }
  if (group.is_leader() && settings.draft_model != (settings.draft != nullptr)) {
    return Error::InvalidArgument(settings.draft_model
                                      ? "draft_model is set but the leader has no draft model"
                                      : "a draft model without draft_model set");
  }
  if (settings.draft != nullptr && group.is_leader()) {
    if (Status same = CheckDraftVocabulary(settings.draft->config(), stage.config()); !same)
      return same.error();
    CHECK_GE(settings.draft->num_slots(), stage.num_slots()) << "the draft model's slots";
    draft.emplace(*settings.draft, timeline);
  }
  StageWorker worker(stage, timeline, blocks ? &*blocks : nullptr, group.rank(), *test_only_hang_step,
                     settings.speculate);
  TensorParallelAgreement agreement(tensor_parallel, plan, stage.part().tp_index, stage.config().vocab_size,
                                    group.is_leader(), timeline);
  Scheduler scheduler(plan, settings, source, observer, group.is_leader(), idle_tick, worker, agreement,
                      timeline, prefix_cache ? &*prefix_cache : nullptr, draft ? &*draft : nullptr);
  scheduler.Begin();
  // Every step must progress, or wait on a peer or a client (base/progress.h):
  // the liveness watch calls a rank stalled in one hung.
  const ProgressExpected generating;
  Status status;
  if (plan.pp == 1) {
    status = OneStageLoop(scheduler, worker, agreement).Run();
  } else {
    PipelineRing ring(group, plan, stage.part(), stage.num_slots(), worker.max_classified(), timeline);
    status = PipelinedLoop(plan, ring, scheduler, worker, agreement).Run();
  }
  if (!status) return status.error();
  GenerationReport report = scheduler.Finish();
  Result<std::vector<std::vector<std::byte>>> gathered = group.gather(0, timeline.Serialize());
  if (!gathered) return gathered.error().Prefixed("gather timelines on rank 0: ");
  for (const std::vector<std::byte>& bytes : *gathered) {
    Result<Timeline> decoded = Timeline::Deserialize(bytes);
    if (!decoded) return decoded.error();
    report.timelines.push_back(std::move(*decoded));
  }
  return report;
}

Result<GenerationReport> Generate(ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
                                  TensorParallelGroup* tensor_parallel,
                                  const std::vector<std::vector<int32_t>>& prompts,
                                  const GenerationOptions& options, GenerationObserver* observer,
                                  Timeline& timeline) {
  if (Status valid = ValidatePrompts(prompts, stage.config(), stage.context_length()); !valid) {
    return valid.error();
  }
  FixedPrompts source(prompts, options.max_new_tokens, options.sampling, observer);
  Result<GenerationReport> report =
      RunGenerator(group, plan, stage, tensor_parallel, options, &source, &source, timeline);
  if (report && group.is_leader()) report->generated = source.generated();
  return report;
}

}  // namespace inferno
