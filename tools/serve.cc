// serve: an OpenAI-compatible HTTP server over the generator loop, on one
// rank or under `launch -n W` on a grid of W ranks: W / T pipeline stages of
// T tensor-parallel ranks each (--tp T, default 1):
//
//   launch -n 2 -- serve --model PATH [--tp T | --ep E [--experts-by-load STATS] [--expert-replicas R]]
//   [--listen 127.0.0.1:8080]
//   [--slots 8] [--queue 64]
//         [--chat-template FILE] [--tokenizer FILE] [--api-key KEY] [--model-name NAME]
//
// Rank 0, the leader (the last stage's tensor-parallel index 0), serves HTTP
// (server/openai_server.h) and owns the request queue, the one source of the
// job's sequences (the last stage's other ranks follow its admissions and
// cancellations, runtime/step_decisions.h); every rank runs its stage of the generator
// loop, which takes queued requests into free KV-cache slots as it goes
// (continuous batching; runtime/generator.h). The leader binds the address
// first and prints "serve: listening on http://HOST:PORT" (port 0 picks a
// free one); /health answers 503 "loading" until every rank has loaded and
// joined. SIGTERM (or SIGINT) drains: new requests get 503, queued and
// running ones finish, every rank exits 0. A lost rank fails the in-flight
// requests (503, or an error event), turns /health unhealthy, and every rank
// exits non-zero within the transport's timeout, as infer's do; with
// --failover (under launch --failover) the survivors instead form the job's
// next generation without it (distributed/regroup.h), re-plan the grid over
// themselves (FailoverGrid: --tp or --ep kept where it divides their count,
// else smaller), and the leader continues every running request from its
// prompt and the tokens it has generated (RequestQueue::Requeue; see
// docs/reliability.md). A standby rank (launch --failover --standby N;
// distributed/standby_rank.h) loads nothing and waits until a regroup gives
// it a lost rank's place (AwaitPlace), then loads that rank's part and
// joins as it, so the job keeps its world size and plan; SIGTERM ends a
// waiting standby with 0. Which ranks were lost is the liveness watch's
// verdict (Transport::LostRanks: killed, stopped, hung, cut off), read when
// the loop fails; when the leader itself is among them, rank 1 coordinates
// the regroup, a standby takes rank 0's place or else rank 1 becomes rank 0,
// and the new rank 0 listens at its own --listen (one per process of the
// job: ranks, then standby ranks; a lost leader that still holds its address,
// stopped or hung, keeps no one from listening, and across hosts each
// address is its own host's); `serve_front` (server/failover_front.h), given
// every process's address, finds the new leader and continues the clients'
// streams there (server/continuation.h). A rank that finds itself lost
// (frozen past the liveness limit: SIGSTOP, then SIGCONT; or hung) has been
// fenced out by the others: it exits 1 saying so, and never serves or
// rejoins. A job running below its own size (no standby took a lost place)
// grows back: its leader keeps a JoinDesk (distributed/regroup.h) at the
// job's address while the loop runs, and when a replacement calls (launch
// --join ADDR:PORT, on any host, with the job's secret), the loop ends at
// its next step on every rank (the leader cancels every running request in
// its step decisions, and broadcasts "grow back" after the loop), the ranks
// regroup with the replacement in a new place (GrowBack), re-plan to the
// job's own grid, and the leader continues the running requests as after a
// failover. Errors are one line on stderr.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <glog/logging.h>

#include "base/command_line.h"
#include "base/default_threads.h"
#include "base/thread_pool.h"
#include "distributed/launcher_lifeline.h"
#include "distributed/regroup.h"
#include "distributed/rendezvous.h"
#include "engine/transformer.h"
#include "runtime/generator.h"
#include "runtime/rank_setup.h"
#include "runtime/sync_codec.h"
#include "runtime/tensor_parallel_group.h"
#include "server/host_port.h"
#include "server/json_constraint.h"
#include "server/metrics.h"
#include "server/openai_server.h"
#include "server/request_queue.h"

namespace inferno {
namespace {

const CommandSpec kSpec{
    "serve",
    "(--model PATH | --shards DIR) [--listen HOST:PORT] [flags]",
    "Serves the OpenAI API (completions, chat completions, streaming) over the job's ranks (pipeline stages "
    "of --tp ranks)\n"
    "(alone or under launch), with continuous batching. Rank 0 serves HTTP. SIGTERM drains and exits 0.",
    {{"model", "PATH",
      "a safetensors file or folder, Hugging Face sharded folder, GGUF file, or llama2.c .bin"},
     {"shards", "DIR", "a folder written by shard; each rank maps only its own file"},
     {"listen", "HOST:PORT",
      "the address to serve on (default 127.0.0.1:8080; port 0: any free port); with --failover, may be "
      "given once per process of the job (ranks, then standby ranks): each listens at its own when it "
      "leads, and serve_front is given them all as --backend"},
     {"model-name", "NAME", "the model id requests name (default: the file or folder name of --model)"},
     {"tokenizer", "FILE", "a tokenizer.json or folder, a llama2.c tokenizer.bin, or byte-level"},
     {"chat-template", "FILE", "a Jinja chat template instead of tokenizer_config.json's"},
     {"slots", "N", "sequences generated at once: KV-cache slots per rank (default 8)"},
     {"queue", "N", "requests that may wait for a slot; more get 429 (default 64)"},
     {"cache-mib", "MIB",
      "the prefix cache's budget over all ranks: KV blocks of earlier prompts a new prompt starting the "
      "same way restores instead of prefilling (default 1024; 0: off)"},
     {"context", "N",
      "positions per sequence, prompt included (default: the model's max_position_embeddings)"},
     {"speculate", "K",
      "speculative decoding: run up to K tokens drafted by prompt lookup with each step, keeping those the "
      "sampler agrees with (greedy output unchanged, sampling keeps its distribution) (default 0: off)"},
     {"draft", "PATH",
      "with --speculate K: draft from this model (any format --model takes, same vocabulary) run on rank "
      "0 instead of by prompt lookup"},
     {"api-key", "KEY", "require 'Authorization: Bearer KEY' on /v1/ requests"},
     {"max-body-bytes", "N", "the largest request body accepted; larger get 413 (default 1 MiB)"},
     {"read-deadline-ms", "N",
      "a request's line, headers and body must arrive within N ms of its first byte; slower clients "
      "get 408 and are disconnected (default 10000)"},
     {"max-connections", "N",
      "client connections served at once (running and queued requests hold one each); more are answered "
      "503 at once and closed (default: 256, or slots + queue + 32 if more)"},
     {"threads", "N", ThreadsFlagHelp()},
     {"tp", "T", "tensor-parallel ranks per pipeline stage (default 1; with --shards, the shards')"},
     {"ep", "E",
      "expert-parallel ranks per pipeline stage, in place of --tp: each holds whole experts of a mixture of "
      "experts, attention split by heads as under --tp E (with --shards, the shards')"},
     {"experts-by-load", "STATS",
      "with --ep: place each layer's experts so the busiest rank gets the least of the routing in STATS "
      "(a file infer --routing-stats wrote), not in contiguous runs (with --shards, shard places them)"},
     {"expert-replicas", "R",
      "with --ep: each rank also holds copies of R experts of the others' (the hottest by "
      "--experts-by-load's "
      "STATS, else spread), and a token's experts held twice run on the less busy holder (default 0; with "
      "--shards, shard copies them)"},
     {"pp", "P", "pipeline stages (default: the world size / --tp or --ep; with --shards, the shards')"},
     {"layers", "a,b,...", "layers per pipeline stage, first stage first (default: balanced)"},
     {"weights", "copy|mapped", "copy weights into memory, or use them in place (default copy)"},
     {"sync-dtype", "f32|bf16|q8_0", kSyncDTypeFlagHelp},
     {"failover", "",
      "when a rank is lost, a standby rank takes its place (launch --standby) and the grid stays, or else "
      "the others carry on without it, re-planning over themselves: --tp/--ep T kept if it divides their "
      "count and the model takes it, else the largest that does (down to 1: a pipeline), experts placed "
      "over it by the same rule; every running request continues, greedy text as undisturbed with the "
      "same T (a smaller T sums in another order: not guaranteed bit for bit) (run under launch "
      "--failover; with --model only, no --layers or --fetch-weights). "
      "A lost rank 0 too (killed, stopped or hung, as the liveness watch finds it): the standby or rank "
      "1 becomes the leader and listens at its --listen; clients' streams continue through serve_front. "
      "A rank found stopped or hung exits once it runs again (fenced out). "
      "A job running below its size grows back when a replacement joins: launch --join ADDR:PORT -- serve "
      "--failover ... (ADDR:PORT: the job's MASTER_ADDR:MASTER_PORT; the job's INFERNO_JOB_SECRET in its "
      "environment), on any host; the job regroups with it at a step boundary, running requests continue"}}};

// --max-connections by default: this many, or kReaderConnections more than
// the running and queued requests hold, if that is more, so that clients
// still sending their request, /health and /metrics find a connection.
constexpr int kMaxConnections = 256;
constexpr int kReaderConnections = 32;
// --cache-mib by default. Blocks take memory only once filled, so an idle
// server holds none of it. 1 GiB holds 4096 positions of an 8B Llama's f32
// keys and values (256 KiB a position: about two 2000-token chats) and
// 76,000 of stories15M's; it is small beside the slots' own KV caches at any
// long context (8 slots of 8192 positions of that 8B model: 16 GiB).
constexpr int64_t kDefaultCacheMib = 1024;

struct ServeOptions {
  ModelChoice model;
  // Every --listen, in order (default 127.0.0.1:8080): one for the whole
  // job, or one per process of a --failover job (see ListenAddress).
  std::vector<HostPort> listen = {{"127.0.0.1", 8080}};
  std::string model_name;
  std::optional<std::string> tokenizer;
  std::optional<std::string> chat_template;
  int slots = 8;
  int64_t queue = 64;
  int64_t cache_mib = kDefaultCacheMib;
  int64_t speculate = 0;
  std::optional<std::string> draft;  // --draft
  std::optional<int64_t> context;
  std::optional<std::string> api_key;
  int64_t max_body_bytes = 1 << 20;
  int64_t read_deadline_ms = 10000;
  int max_connections = kMaxConnections;
  int threads = 1;
  WeightPlacement weight_placement = WeightPlacement::kCopy;
  SyncDType sync_dtype = SyncDType::kF32;
  bool failover = false;
};

Result<ServeOptions> ParseOptions(const CommandLine& flags) {
  ServeOptions options;
  Result<ModelChoice> model = ParseModelChoice(flags, "serve");
  if (!model) return model.error();
  options.model = *std::move(model);
  if (flags.Has("listen")) options.listen.clear();
  for (const std::string& listen : flags.All("listen")) {
    Result<HostPort> address = ParseHostPort("listen", listen);
    if (!address) return address.error();
    options.listen.push_back(*address);
  }
  const std::filesystem::path path(options.model.model);
  options.model_name =
      flags.Last("model-name")
          .value_or(path.has_filename() ? path.stem().string() : path.parent_path().filename().string());
  options.tokenizer = flags.Last("tokenizer");
  options.chat_template = flags.Last("chat-template");
  options.api_key = flags.Last("api-key");
  if (options.api_key && options.api_key->empty())
    return Error::InvalidArgument("--api-key: the key is empty");
  Result<int64_t> slots = flags.Int("slots", 8, 1, 4096);
  Result<int64_t> queue = flags.Int("queue", 64, 0, 1 << 20);
  Result<int64_t> body = flags.Int("max-body-bytes", 1 << 20, 1, int64_t{1} << 30);
  Result<int64_t> read_deadline = flags.Int("read-deadline-ms", 10000, 1, 3600 * 1000);
  Result<int64_t> threads = flags.Int("threads", DefaultThreads().threads, 1, 256);
  Result<int64_t> cache_mib = flags.Int("cache-mib", kDefaultCacheMib, 0, int64_t{1} << 30);
  Result<int64_t> speculate = flags.Int("speculate", 0, 0, TransformerStage::kMaxPositionsPerCall - 1);
  for (const Error* error :
       {slots ? nullptr : &slots.error(), queue ? nullptr : &queue.error(), body ? nullptr : &body.error(),
        read_deadline ? nullptr : &read_deadline.error(), threads ? nullptr : &threads.error(),
        cache_mib ? nullptr : &cache_mib.error(), speculate ? nullptr : &speculate.error()}) {
    if (error != nullptr) return *error;
  }
  Result<int64_t> connections =
      flags.Int("max-connections", std::max<int64_t>(kMaxConnections, *slots + *queue + kReaderConnections),
                1, 1 << 16);
  if (!connections) return connections.error();
  options.max_connections = static_cast<int>(*connections);
  options.slots = static_cast<int>(*slots);
  options.queue = *queue;
  options.max_body_bytes = *body;
  options.read_deadline_ms = *read_deadline;
  options.threads = static_cast<int>(*threads);
  options.cache_mib = *cache_mib;
  options.speculate = *speculate;
  options.draft = flags.Last("draft");
  if (options.draft && *speculate == 0) {
    return Error::InvalidArgument("--draft drafts for speculative decoding: add --speculate K");
  }
  if (flags.Has("context")) {
    Result<int64_t> context = flags.Int("context", 0, 1, INT32_MAX);
    if (!context) return context.error();
    options.context = *context;
  }
  Result<WeightPlacement> placement = ParseWeightPlacement(flags);
  if (!placement) return placement.error();
  options.weight_placement = *placement;
  Result<SyncDType> sync = ParseSyncDType(flags.Last("sync-dtype").value_or("f32"));
  if (!sync) return sync.error();
  options.sync_dtype = *sync;
  options.failover = flags.Has("failover");
  if (options.failover) {
    if (Status plan = CheckFailoverChoice(options.model); !plan) return plan.error();
  }
  if (options.listen.size() > 1 && !options.failover) {
    return Error::InvalidArgument(
        "--listen is given " + std::to_string(options.listen.size()) +
        " times: one address per process is for --failover jobs (each rank listens at its own when it "
        "leads); give one --listen");
  }
  return options;
}

// Where this process serves HTTP when it leads: the one --listen, or with
// one per process, the one of its first place in the job (`where`: rank r
// the r-th, standby s the (W + s)-th of a job of W ranks), so a leader
// that is lost but still holds its address (stopped, hung) never keeps the
// next leader from listening. Errors: InvalidArgument when the count of
// --listen is neither 1 nor the job's processes.
Result<HostPort> ListenAddress(const ServeOptions& options, const RendezvousConfig& where) {
  if (options.listen.size() == 1) return options.listen.front();
  const int processes = where.world_size + where.standby_ranks;
  if (static_cast<int>(options.listen.size()) != processes) {
    return Error::InvalidArgument("--listen is given " + std::to_string(options.listen.size()) +
                                  " times for a job of " + std::to_string(processes) +
                                  " processes (ranks and standby ranks): give one, or one per process");
  }
  return options.listen[where.standby ? where.world_size + *where.standby : where.rank];
}

// How long the leader keeps answering after the pipeline failed (503s, and
// /health "unhealthy"), at most.
constexpr std::chrono::milliseconds kUnhealthyLinger{1000};

// What a rank holds before it talks to the others.
struct PreparedRank {
  RankSetup setup;
  std::optional<ChatTemplate> chat;  // none when the model has none and --chat-template is absent
  StageWeights weights;
  std::optional<DraftSetup> draft;  // rank 0 with --draft
};

// Opens rank `rank` of a world of `world_size` over `model` (the job's
// --model and grid, or after a regroup FailoverGrid's) and loads its weights.
Result<PreparedRank> Prepare(const ServeOptions& options, const ModelChoice& model, int rank,
                             int world_size) {
  RankSetupOptions setup_options;
  setup_options.model = model;
  setup_options.tokenizer = options.tokenizer;
  setup_options.context = options.context;
  Result<RankSetup> setup = OpenRank(setup_options, rank, world_size);
  if (!setup) return setup.error();
  PreparedRank prepared;
  prepared.setup = std::move(*setup);
  const LoadedTokenizer& tokenizer = prepared.setup.tokenizer;
  if (options.chat_template || (tokenizer.chat_config && tokenizer.chat_config->chat_template)) {
    Result<ChatTemplate> chat = LoadChatTemplate(options.chat_template, tokenizer);
    if (!chat) return chat.error();
    prepared.chat = std::move(*chat);
  }
  if (Status fits = prepared.setup.config.CheckContextFits(prepared.setup.context_limit); !fits) {
    return fits.error();
  }
  auto weights = LoadRankWeights(prepared.setup.model, rank, options.weight_placement, "serve");
  if (!weights) return weights.error();
  prepared.weights = std::move(*weights);
  if (options.draft && rank == 0) {
    Result<DraftSetup> draft = LoadDraftModel(*options.draft, prepared.setup, prepared.setup.context_limit,
                                              options.weight_placement, "serve");
    if (!draft) return draft.error();
    prepared.draft = std::move(*draft);
  }
  return prepared;
}

// What the ranks must agree on (see RendezvousOptions::fingerprint).
std::map<std::string, std::string> ServeFingerprint(const ServeOptions& options,
                                                    const PreparedRank& prepared) {
  std::ostringstream settings;
  settings << "context=" << prepared.setup.context_limit << " slots=" << options.slots
           << " cache_mib=" << options.cache_mib << " speculate=" << options.speculate
           << " draft_model=" << options.draft.has_value()
           << " sync_dtype=" << SyncDTypeName(options.sync_dtype) << " failover=" << options.failover
           << " stop_ids=";
  for (int32_t id : prepared.setup.stop_ids) settings << id << ",";
  std::map<std::string, std::string> fingerprint = RankFingerprint(prepared.setup);
  fingerprint["serve"] = settings.str();
  return fingerprint;
}

// The signals serve handles itself (SIGTERM and SIGINT drain), blocked in
// every thread; the leader waits for them on a thread of its own.
sigset_t DrainSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

int Fail(int rank, const Error& error, int code) {
  std::fprintf(stderr, "serve: rank %d: %s\n", rank, error.ToString().c_str());
  return code;
}

// How long the leader waits for the survivors of a lost rank to report
// (Regroup's window); one loss closes the membership as soon as the others
// are in.
constexpr std::chrono::milliseconds kRegroupWindow{5000};

// The leader's parts, which outlive every generation of the job.
struct Leader {
  RequestQueue& queue;
  ServerMetrics& metrics;
  OpenAiServer& server;
};

// Ends the job on this rank after `error`: the leader fails every request
// with it, and answers 503 "unhealthy" for `linger` before the exit, so
// handlers answer their requests (a client that reads slowly is not waited
// for).
[[noreturn]] void EndJob(int rank, const Error& error, Leader* leader, std::chrono::milliseconds linger) {
  std::fprintf(stderr, "serve: rank %d: %s\n", rank, error.ToString().c_str());
  if (leader != nullptr) {
    leader->server.SetUnhealthy(error.ToString());
    leader->queue.Fail(error);
    std::this_thread::sleep_for(linger);
    std::fflush(stdout);
  }
  std::_Exit(1);
}

// How one generation of the job (one ProcessGroup) ended.
struct GenerationEnd {
  // Set when the generator loop failed (a rank was lost); the group has
  // been aborted, so its other ranks fail at once with this reason.
  std::optional<Error> lost;
  // Then: the ranks the liveness watch found lost (Transport::LostRanks),
  // this one included when it was frozen or hung past the watch's limit.
  std::vector<int> lost_ranks;
  // Set when the loop ended for a grow-back, which every rank agreed to (the
  // leader's broadcast after the loop): a replacement called the leader's
  // JoinDesk while the job ran below its size.
  bool grow_back = false;
};

// How long a new rank 0 retries listening at the job's address while the
// regroup's coordinator (another process) closes its socket there.
constexpr std::chrono::milliseconds kListenRetry{2000};

// How long after the generator loop failed a rank waits for its liveness
// watch to name a lost rank (a rank that failed on another's abort notice
// reaches the same verdict itself within a beat or two of the first rank
// to fail: the watch's limit is 1.5 s from the fault); none by then: the
// failure lost no rank.
constexpr std::chrono::milliseconds kVerdictWait{2500};
// How often the fence watch asks the transport.
constexpr std::chrono::milliseconds kFenceCheck{100};

// Ends this process once its own liveness watch finds that it was frozen
// (SIGSTOP) or hung past the watch's limit: its peers then judge it lost and
// go on without it, so it must neither serve nor rejoin (it would be a second
// leader). A thread of its own, so that a hung main thread is ended too.
[[noreturn]] void Fenced(int rank) {
  std::fprintf(stderr,
               "serve: rank %d: this rank was frozen or hung past the liveness limit, so the other ranks "
               "have gone on without it (fenced out); exiting\n",
               rank);
  std::fflush(stderr);
  std::_Exit(1);
}

bool Among(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

// Watches `transport` on a thread of its own from construction to
// destruction, ending the process (Fenced) once this rank is among its lost
// ranks.
class FenceWatch {
 public:
  explicit FenceWatch(const Transport& transport)
      : thread_([this, &transport] {
          std::unique_lock<std::mutex> lock(mutex_);
          while (!stop_) {
            if (Among(transport.LostRanks(), transport.rank())) Fenced(transport.rank());
            wake_.wait_for(lock, kFenceCheck);
          }
        }) {}
  ~FenceWatch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  FenceWatch(const FenceWatch&) = delete;
  FenceWatch& operator=(const FenceWatch&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Under --failover, after the loop ended without a failure: whether the
// job regroups to grow back (rank 0 says, every rank hears the same), or
// has drained. Errors: the broadcast's (the group failed at the end).
Result<bool> AgreeOnGrowBack(ProcessGroup& group, const RequestQueue* queue) {
  std::array<std::byte, 1> grow{
      std::byte{queue != nullptr && queue->regroup_asked() ? uint8_t{1} : uint8_t{0}}};
  if (Status agreed = group.broadcast(0, grow); !agreed) return agreed.error();
  return grow[0] == std::byte{1};
}

// One generation: joins the group `config` describes with `prepared`'s
// weights (moved into the stage) and runs the generator loop until the
// queue is drained (leader), a replacement joins (below), or the loop
// fails. Calls `on_joined` once the group is formed. `retry_listen`: rank 0
// retries a failed listen for kListenRetry. With --failover, a leader of a
// generation below `job_size` ranks keeps a JoinDesk at the job's address
// while the loop runs; a replacement's call asks the queue to regroup
// (RequestQueue::AskRegroup), and the generation ends with grow_back on
// every rank. `join_failure_is_loss`: a failed Join (a member lost while
// it loaded, e.g. a replacement killed) ends the generation as a loss
// naming no rank, so the members regroup without it. Errors: joining the
// group (unless that is a loss).
Result<GenerationEnd> ServeGeneration(const ServeOptions& options, const RendezvousConfig& config,
                                      PreparedRank& prepared, Leader* leader,
                                      const std::function<void()>& on_joined, bool retry_listen, int job_size,
                                      bool join_failure_is_loss) {
  RendezvousOptions rendezvous;
  rendezvous.fingerprint = ServeFingerprint(options, prepared);
  bool listened = false;
  rendezvous.on_master_listening = [&listened](int) { listened = true; };
  const auto retry_until = std::chrono::steady_clock::now() + kListenRetry;
  Result<ProcessGroup> group = Join(config, rendezvous);
  while (!group && retry_listen && !listened && group.error().kind == ErrorKind::kTransport &&
         std::chrono::steady_clock::now() < retry_until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    group = Join(config, rendezvous);
  }
  if (!group && join_failure_is_loss)
    return GenerationEnd{group.error().Prefixed("joining the process group: "), {}};
  if (!group) return group.error().Prefixed("joining the process group: ");
  // Only --failover fences: there the others go on without a rank they
  // judged lost, so it must never serve again. Its verdict on itself uses
  // the transport's shortest limit (1.5 s), never a peer's longer one
  // (10 s while that peer is flooded): a rank cannot know its peers'
  // floods, and fencing early only costs a failover, where fencing late
  // lets a second leader serve. Without --failover a lost rank ends the job
  // anyway, so a self-verdict there could only end a job its peers kept.
  std::optional<FenceWatch> fence;
  if (options.failover) fence.emplace(*group->transport());
  Result<std::optional<TensorParallelGroup>> tensor_parallel =
      MakeTensorParallelGroup(*group, prepared.setup.model.plan, options.sync_dtype);
  if (!tensor_parallel) return tensor_parallel.error();
  TensorParallelGroup* stage_group = *tensor_parallel ? &**tensor_parallel : nullptr;
  ThreadPool pool(options.threads);
  TransformerStage stage(prepared.setup.config, std::move(prepared.weights), options.slots,
                         prepared.setup.context_limit, pool, stage_group);
  std::optional<TransformerStage> draft;
  if (prepared.draft) {
    draft.emplace(prepared.draft->setup.config, std::move(prepared.draft->weights), options.slots,
                  prepared.draft->context_length, pool);
  }
  on_joined();
  GeneratorSettings settings;
  settings.stop_ids = prepared.setup.stop_ids;
  settings.report_logits = false;
  settings.prefix_cache_bytes = options.cache_mib << 20;
  settings.speculate = options.speculate;
  settings.draft_model = options.draft.has_value();
  settings.draft = draft ? &*draft : nullptr;
  if (leader != nullptr) {
    ServerMetrics& metrics = leader->metrics;
    settings.report_prefix_cache = [&metrics](const PrefixCacheStats& stats) {
      metrics.SetPrefixCache(stats);
    };
    settings.report_drafts = [&metrics](int64_t drafted, int64_t accepted) {
      metrics.CountDrafts(drafted, accepted);
    };
    // Called from the generator's thread, the one that runs `stage`.
    settings.report_rank_times = [&metrics, &stage](std::span<const RankTimes> ranks) {
      for (const RankTimes& times : ranks) {
        metrics.SetRankTimes(times.rank, times.compute_seconds, times.wait_seconds);
      }
      metrics.SetRoutedPositions(stage.part().layers.begin, stage.config().num_experts,
                                 stage.RoutingCounts());
    };
  }
  Timeline timeline(false);
  RequestQueue* queue = leader != nullptr ? &leader->queue : nullptr;
  std::unique_ptr<JoinDesk> desk;
  if (options.failover && queue != nullptr && config.world_size < job_size) {
    Result<std::unique_ptr<JoinDesk>> opened = JoinDesk::Open(config, [queue] {
      std::fprintf(stderr, "serve: rank 0: a replacement called; the job grows back at the next step\n");
      queue->AskRegroup();
    });
    if (opened) {
      desk = *std::move(opened);
    } else {
      std::fprintf(stderr, "serve: rank 0: no replacement can join this generation: %s\n",
                   opened.error().ToString().c_str());
    }
  }
  Result<GenerationReport> report =
      RunGenerator(*group, prepared.setup.model.plan, stage, stage_group, settings, queue, queue, timeline);
  desk.reset();  // before anything else listens at the job's address
  if (report && !options.failover) return GenerationEnd{};
  Result<bool> grow = report ? AgreeOnGrowBack(*group, queue) : Result<bool>(false);
  if (report && grow) return GenerationEnd{std::nullopt, {}, *grow};
  if (!grow) report = grow.error();
  // Which ranks were lost, from the liveness watch, before the abort stops it
  // (only failover needs them: without it the job ends at once).
  Transport& transport = *group->transport();
  std::vector<int> lost_ranks = transport.LostRanks();
  const auto until =
      std::chrono::steady_clock::now() + (options.failover ? kVerdictWait : std::chrono::milliseconds(0));
  for (; lost_ranks.empty() && std::chrono::steady_clock::now() < until; lost_ranks = transport.LostRanks()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The other ranks fail at once with this reason rather than time out.
  transport.Abort(report.error().ToString());
  return GenerationEnd{report.error(), std::move(lost_ranks)};
}

// Starts the leader's HTTP server in `server` at `listen` (see
// ListenAddress) and prints where. Errors: Io (the address cannot be bound).
Status StartLeading(const ServeOptions& options, const HostPort& listen, RequestQueue& queue,
                    ServerMetrics& metrics, std::optional<OpenAiServer>& server) {
  ServerSettings settings;
  settings.model_name = options.model_name;
  settings.api_key = options.api_key;
  settings.max_body_bytes = options.max_body_bytes;
  settings.request_deadline = std::chrono::milliseconds(options.read_deadline_ms);
  settings.max_connections = options.max_connections;
  settings.continuations = options.failover;
  server.emplace(settings, queue, metrics);
  Result<int> port = server->Bind(listen.host, listen.port);
  if (!port) {
    if (options.listen.size() > 1 || !options.failover) return port.error();
    return port.error().Prefixed(
        "as the job's new leader (a lost leader may still hold the one --listen address: give each "
        "process its own --listen): ");
  }
  server->Start();
  std::printf("serve: listening on http://%s:%d\n", listen.host.c_str(), *port);
  std::fflush(stdout);
  return {};
}

// "serve: rank R: <error>; failing over (lost: 0, 2) (the leader is lost)".
void ReportFailingOver(int rank, const GenerationEnd& end) {
  std::string lost;
  for (int lost_rank : end.lost_ranks) lost += (lost.empty() ? "" : ", ") + std::to_string(lost_rank);
  std::fprintf(stderr, "serve: rank %d: %s; failing over (lost: %s)%s\n", rank, end.lost->ToString().c_str(),
               lost.empty() ? "none named" : lost.c_str(),
               Among(end.lost_ranks, 0) ? " (the leader is lost)" : "");
}

// What a rank knows of its job across the generations.
struct JobState {
  RendezvousConfig config;  // the current generation's
  int first_generation = 0;
  // When this rank saw the last loss, or the grow-back began (a standby:
  // when it got its place).
  std::chrono::steady_clock::time_point lost_at;
  int standbys_left = 0;   // the job's standby ranks not yet taken
  int standbys_taken = 0;  // by the last regroup
  // The job's own size, which a grow-back returns to (a standby learns it
  // with its place), and whether the last regroup was a grow-back.
  int job_size = 0;
  bool grew_back = false;
};

// A standby rank's wait for a place (AwaitPlace; SIGTERM or SIGINT ends it),
// then `job` set for it. Returns the status to exit with instead: 0 when
// the job ended without it, 1 on an error, 2 without --failover.
std::optional<int> AwaitStandbyPlace(const ServeOptions& options, const RendezvousConfig& where,
                                     const sigset_t& drain_signals, JobState& job) {
  if (!options.failover) {
    std::fprintf(stderr, "serve: standby rank %d: a standby rank (INFERNO_STANDBY) needs --failover\n",
                 *where.standby);
    return 2;
  }
  const auto drain_asked = [&drain_signals] {
    const timespec now{};
    return sigtimedwait(&drain_signals, nullptr, &now) > 0;
  };
  Result<std::optional<Regrouped>> place = AwaitPlace(where, drain_asked);
  if (!place) {
    std::fprintf(stderr, "serve: standby rank %d: %s\n", *where.standby, place.error().ToString().c_str());
    return 1;
  }
  if (!*place) return 0;  // the job ended without needing this standby
  job.config = (*place)->config;
  job.first_generation = (*place)->generation;
  job.lost_at = std::chrono::steady_clock::now();
  job.standbys_taken = (*place)->standbys_taken;
  job.standbys_left -= job.standbys_taken;
  job.job_size = (*place)->job_size;
  std::fprintf(stderr, "serve: standby rank %d takes rank %d's place in generation %d\n", *where.standby,
               (*place)->old_ranks[job.config.rank], job.first_generation);
  return std::nullopt;
}

// After generation `generation` ended for a grow-back (every rank agreed):
// GrowBack, then the leader requeues the running requests; `job` is set for
// the next generation. Ends the job on an error.
void GrowBackAfter(int generation, JobState& job, RequestQueue& queue, Leader* leader,
                   std::chrono::milliseconds linger) {
  job.lost_at = std::chrono::steady_clock::now();
  Result<Regrouped> grown = GrowBack(job.config, generation + 1, kRegroupWindow, job.job_size);
  if (!grown) EndJob(job.config.rank, grown.error(), leader, linger);
  job.standbys_taken = grown->standbys_taken;
  job.standbys_left = std::max(0, job.standbys_left - job.standbys_taken);
  if (job.config.rank == 0) {
    const int64_t requeued = queue.Requeue();
    std::fprintf(stderr,
                 "serve: rank 0: generation %d: %d ranks (%d replacement(s) joined%s); %lld running requests "
                 "continue\n",
                 generation + 1, grown->config.world_size, job.standbys_taken,
                 job.standbys_taken == 0 ? ": none called again in time, the join is abandoned" : "",
                 static_cast<long long>(requeued));
  }
  job.config = grown->config;
}

// The leader's prompt maker over the job's tokenizer and chat template.
PromptMaker MakePromptMaker(const PreparedRank& prepared) {
  PromptMaker maker;
  maker.tokenizer = prepared.setup.tokenizer.tokenizer.get();
  maker.bos_id = prepared.setup.tokenizer.bos_id;
  maker.chat = prepared.chat ? &*prepared.chat : nullptr;
  if (prepared.setup.tokenizer.chat_config) {
    maker.bos_token = prepared.setup.tokenizer.chat_config->bos_token;
    maker.eos_token = prepared.setup.tokenizer.chat_config->eos_token;
  }
  maker.context_length = prepared.setup.context_limit;
  maker.token_texts = std::make_shared<const std::vector<std::string>>(
      TokenTexts(*maker.tokenizer, prepared.setup.config.vocab_size));
  maker.stop_ids = prepared.setup.stop_ids;
  return maker;
}

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) {
  using namespace inferno;
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  const CommandLine flags = ParseCommandLineOrExit(argc, argv, kSpec);
  // Before any thread starts: the drain signals are taken by sigwait (leader)
  // or left pending (the other ranks, which end when the leader does), and
  // a client gone mid-write is an error of the write, not a SIGPIPE.
  const sigset_t drain_signals = DrainSignals();
  pthread_sigmask(SIG_BLOCK, &drain_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  if (Status watched = WatchLauncherLifeline(std::getenv); !watched) {
    std::fprintf(stderr, "serve: %s\n", watched.error().ToString().c_str());
    return 2;
  }
  Result<RendezvousConfig> where = ReadRendezvousConfig(std::getenv);
  if (!where) {
    std::fprintf(stderr, "serve: %s\n", where.error().ToString().c_str());
    return 2;
  }
  const int rank = where->rank;
  Result<ServeOptions> options = ParseOptions(flags);
  if (!options) return Fail(rank, options.error(), 2);
  const Result<HostPort> listen = ListenAddress(*options, *where);
  if (!listen) return Fail(rank, listen.error(), 2);
  JobState job;
  job.config = *where;
  job.standbys_left = where->standby_ranks;
  job.job_size = where->world_size;
  if (where->standby) {
    if (std::optional<int> status = AwaitStandbyPlace(*options, *where, drain_signals, job)) return *status;
  }
  RendezvousConfig& config = job.config;

  // The leader's parts: the queue and metrics (every rank has them; only a
  // leader uses them) and the HTTP server, which a rank starts when it first
  // leads a generation: rank 0 before loading (so /health can say
  // "loading"), or a rank that becomes rank 0 after the leader was lost.
  RequestQueue queue(options->queue);
  ServerMetrics metrics;
  std::optional<OpenAiServer> server;
  bool serving = false;  // SetReady called
  std::optional<Leader> leader_parts;
  const auto leading = [&]() -> Leader* { return leader_parts ? &*leader_parts : nullptr; };
  const auto linger = [](const RendezvousConfig& config) {
    return std::min<std::chrono::milliseconds>(kUnhealthyLinger, config.op_timeout / 4);
  };
  // Every generation's rank; the leader's prompt maker points into the one it
  // first led.
  std::deque<PreparedRank> prepared_ranks;
  for (int generation = job.first_generation;; ++generation) {
    if (config.rank == 0 && !server) {
      if (Status started = StartLeading(*options, *listen, queue, metrics, server); !started)
        return Fail(config.rank, started.error(), 1);
      leader_parts.emplace(Leader{queue, metrics, *server});
    }
    // After a regroup every member re-plans the job's grid over the members
    // (FailoverGrid): the same grid while standbys fill the lost places.
    Result<ModelChoice> grid = generation == 0 ? Result<ModelChoice>(options->model)
                                               : FailoverGrid(options->model, config.world_size);
    if (!grid) EndJob(config.rank, grid.error(), leading(), linger(config));
    Result<PreparedRank> prepared = Prepare(*options, *grid, config.rank, config.world_size);
    if (!prepared) EndJob(config.rank, prepared.error(), leading(), linger(config));
    prepared_ranks.push_back(std::move(*prepared));
    const auto on_joined = [&] {
      if (config.rank != 0) return;
      metrics.SetRanks(config.world_size);
      if (generation > 0) {
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - job.lost_at;
        if (job.grew_back) {
          metrics.CountJoins(job.standbys_taken);
        } else {
          metrics.ObserveFailover(took.count(), job.standbys_taken);
        }
        const ShardPlan& plan = prepared_ranks.back().setup.model.plan;
        std::fprintf(stderr, "serve: rank 0: generation %d formed over %d ranks (%s) %.3f s after the %s\n",
                     generation, config.world_size, GridText(plan).c_str(), took.count(),
                     job.grew_back ? "previous one ended to take a replacement in" : "loss");
      }
      if (serving) return;
      serving = true;
      server->SetReady(MakePromptMaker(prepared_ranks.back()));
      std::thread([&server, &queue, drain_signals] {
        int signal = 0;
        sigwait(&drain_signals, &signal);
        std::fprintf(stderr, "serve: rank 0: got SIG%s; draining\n", sigabbrev_np(signal));
        server->SetDraining();
        queue.Drain();
      }).detach();
    };
    // A new rank 0 listens where the regroup's coordinator (maybe another
    // process) just did; that socket may take a moment to close.
    const bool retry_join = generation > 0 && config.rank == 0;
    Result<GenerationEnd> end =
        ServeGeneration(*options, config, prepared_ranks.back(), leading(), on_joined, retry_join,
                        job.job_size, options->failover && generation > 0);
    if (!end) EndJob(config.rank, end.error(), leading(), linger(config));
    job.grew_back = end->grow_back;
    if (job.grew_back) {
      GrowBackAfter(generation, job, queue, leading(), linger(config));
      continue;
    }
    if (!end->lost) break;
    if (!options->failover) EndJob(config.rank, *end->lost, leading(), linger(config));
    job.lost_at = std::chrono::steady_clock::now();
    // The liveness watch's verdict: a rank found lost itself (it was stopped
    // or hung) is fenced out; with rank 0 lost, rank 1 coordinates.
    if (Among(end->lost_ranks, config.rank)) Fenced(config.rank);
    ReportFailingOver(config.rank, *end);
    Result<Regrouped> regrouped =
        Regroup(config, generation + 1, kRegroupWindow, job.standbys_left, end->lost_ranks, job.job_size);
    if (!regrouped) EndJob(config.rank, regrouped.error(), leading(), linger(config));
    job.standbys_taken = regrouped->standbys_taken;
    job.standbys_left -= job.standbys_taken;
    if (config.rank == 0) {
      const int64_t requeued = queue.Requeue();
      std::fprintf(stderr,
                   "serve: rank 0: generation %d: %d ranks (%d standby rank(s) took a place); %lld running "
                   "requests continue\n",
                   generation + 1, regrouped->config.world_size, regrouped->standbys_taken,
                   static_cast<long long>(requeued));
    } else if (regrouped->config.rank == 0) {
      std::fprintf(stderr,
                   "serve: rank %d: the leader is lost; leading generation %d over %d ranks (%d standby "
                   "rank(s) took a place)\n",
                   config.rank, generation + 1, regrouped->config.world_size, regrouped->standbys_taken);
    }
    config = regrouped->config;
  }
  if (server) server->Stop();
  return 0;
}
