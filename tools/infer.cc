// infer: generates text with a Llama-architecture model, alone or under
// `launch -n W` on a grid of --pp pipeline stages × --tp tensor-parallel
// ranks (each rank runs its part of the plan, loader/shard_plan.h: a range of
// layers, or its heads and hidden units of them, and a slice of the
// classifier's rows; rank 0 samples and prints). --ep E in place of --tp E
// places a mixture of experts' experts whole on a stage's E ranks.
//
//   infer (--model PATH | --shards DIR | --fetch-weights [--model PATH] [--cache DIR])
//         (--prompt TEXT | --prompt-ids "1 300 45")...
//         [--prompts-file FILE] [--chat TEXT [--system TEXT] [--chat-template FILE]]
//         [--tokenizer FILE] [--max-new-tokens N] [--context N]
//         [--temperature T] [--top-k K] [--top-p P] [--seed S] [--threads N]
//         [--tp T | --ep E [--experts-by-load STATS] [--expert-replicas R]] [--pp P] [--layers a,b,...]
//         [--output text|ids] [--trace FILE] [--routing-stats FILE] [--dump-logits FILE]
//
// --prompt, --prompt-ids, --prompts-file (one text prompt per line) and
// --chat may be combined and repeated; several prompts run micro-batched
// through the pipeline (--prompt-ids prompts first, then text prompts, then
// chats, each in order). --chat TEXT is a user message (after --system's
// message, if given), formatted with the chat template of the tokenizer's
// tokenizer_config.json (or --chat-template FILE) and its generation prompt.
// Text prompts get the tokenizer's BOS prepended (if it has one);
// --prompt-ids are used as given. --pp defaults to W / --tp. Without
// --layers, layers are split evenly; the classifier's rows are then spread
// to balance the ranks' compute (loader/pipeline_split.h). With --shards the
// grid is the shards' (--tp and --pp, when given, must match it). Without
// --tokenizer, the model folder's
// tokenizer.json is used, or for a model with the byte tokenizer's 259-token
// vocabulary the byte-level tokenizer; any other model needs --tokenizer for
// text. Sequences stop at the model's eos_token_id (config.json,
// generation_config.json; llama2.c files: 2 and 1). With --fetch-weights
// only rank 0 reads --model; it streams every other rank its shard after the
// rendezvous (runtime/weight_transfer.h), which a rank with --cache DIR keeps
// by content hash and next time reads from there. The KV cache holds the
// longest prompt plus --max-new-tokens positions (at most --context).
// --output ids prints, per prompt, the generated ids (prompt excluded) on one
// line and nothing else. --dump-logits writes every sampled-from logit vector
// (f32, native byte order, prompt by prompt) for exactness tests.
// --speculate K drafts up to K tokens per step by prompt lookup, or with
// --draft PATH from a small model of the same vocabulary run on rank 0, and
// keeps those the sampler agrees with (docs/serving.md). With --failover
// (under launch --failover), a lost rank other than 0 does not end the job:
// the others form its next generation (distributed/regroup.h; a standby
// rank of launch --standby takes the lost rank's place and the grid stays,
// else the grid is re-planned over fewer ranks as serve's is: FailoverGrid,
// --tp/--ep kept where it divides their count, else smaller), and every
// prompt not done continues from its prompt plus the tokens it had
// (runtime/fixed_prompts.h): greedy output is that of an undisturbed run
// with the same --tp/--ep (a smaller one sums in another order: not
// guaranteed bit for bit); the statistics are the last generation's.
// Statistics go to stderr at the end. Every error is one line on stderr and a non-zero
// exit on every rank.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <glog/logging.h>

#include "base/command_line.h"
#include "base/default_threads.h"
#include "base/progress.h"
#include "base/thread_pool.h"
#include "distributed/launcher_lifeline.h"
#include "distributed/regroup.h"
#include "distributed/rendezvous.h"
#include "engine/stage_weights.h"
#include "engine/transformer.h"
#include "loader/routing_stats.h"
#include "loader/shard_plan.h"
#include "model/model_config.h"
#include "runtime/fixed_prompts.h"
#include "runtime/generator.h"
#include "runtime/rank_setup.h"
#include "runtime/sampler.h"
#include "runtime/sync_codec.h"
#include "runtime/tensor_parallel_group.h"
#include "runtime/weight_transfer.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer.h"
#include "text/tokenizer_files.h"
#include "text/utf8.h"

namespace inferno {
namespace {

// Inputs beyond these are refused unless a flag raises the limit.
constexpr int64_t kDefaultMaxPromptBytes = int64_t{1} << 20;

const CommandSpec kSpec{
    "infer",
    "(--model PATH | --shards DIR | --fetch-weights) (--prompt TEXT | --prompt-ids IDS | --prompts-file "
    "FILE) "
    "[flags]",
    "Generates a continuation of every prompt, over a grid of pipeline stages x tensor-parallel ranks\n"
    "(alone, under launch, mpirun or srun). Several prompts are micro-batched. Errors are one line on\n"
    "every rank.",
    {{"model", "PATH",
      "a safetensors file or folder, Hugging Face sharded folder, GGUF file, or llama2.c .bin"},
     {"shards", "DIR", "a folder written by shard; each rank maps only its own file"},
     {"fetch-weights", "",
      "only rank 0 reads --model: it sends every other rank its shard (checked by BLAKE2b, over the job's "
      "secured channel); the other ranks need no model file and ignore --model"},
     {"cache", "DIR",
      "with --fetch-weights: keep the received shard in DIR by its content hash, and read it from there "
      "(receiving nothing) when rank 0 offers the same bytes again; a damaged entry is fetched again. "
      "Rank 0 keeps its shards' digests in DIR/digests, so that it hashes an unchanged model only once"},
     {"prompt", "TEXT", "a prompt (repeatable)"},
     {"prompt-ids", "IDS", "a prompt as token ids, e.g. \"1 300 45\" (repeatable)"},
     {"prompts-file", "FILE", "one prompt per non-empty line (repeatable)"},
     {"chat", "TEXT", "a user message, formatted with the model's chat template (repeatable)"},
     {"system", "TEXT", "a system message before every --chat message"},
     {"chat-template", "FILE", "a Jinja chat template instead of tokenizer_config.json's"},
     {"max-prompt-bytes", "N",
      "the longest --prompt, --prompt-ids or --prompts-file accepted (default 1 MiB)"},
     {"tokenizer", "FILE",
      "a tokenizer.json or a folder holding one, a llama2.c tokenizer.bin, or byte-level (default: the "
      "model folder's tokenizer.json)"},
     {"max-new-tokens", "N", "tokens to generate per prompt (default 256)"},
     {"context", "N",
      "the most positions a sequence may use, prompt included (default: the model's "
      "max_position_embeddings)"},
     {"temperature", "T", "sampling temperature: 0 (greedy, the default) or in [0.001, 100]"},
     {"top-k", "K", "sample among the K most likely tokens; 0 is all (default 0)"},
     {"top-p", "P", "nucleus sampling mass (default 1)"},
     {"seed", "S", "sampling seed (default 42)"},
     {"speculate", "K",
      "speculative decoding: run up to K tokens drafted by prompt lookup (the tokens that followed the "
      "last earlier occurrence of the sequence's latest 3, else 2, tokens) with each step, keeping those "
      "the sampler agrees with; greedy output is unchanged, sampling keeps its distribution (default 0: "
      "off)"},
     {"draft", "PATH",
      "with --speculate K: draft from this model (any format --model takes, same vocabulary) run on rank "
      "0 instead of by prompt lookup"},
     {"threads", "N", ThreadsFlagHelp()},
     {"tp", "T", "tensor-parallel ranks per pipeline stage (default 1; with --shards, the shards')"},
     {"ep", "E",
      "expert-parallel ranks per pipeline stage, in place of --tp: each holds whole experts of a mixture of "
      "experts, attention split by heads as under --tp E (with --shards, the shards')"},
     {"experts-by-load", "STATS",
      "with --ep: place each layer's experts so the busiest rank gets the least of the routing in STATS "
      "(a file --routing-stats wrote), not in contiguous runs (with --shards, shard places them)"},
     {"expert-replicas", "R",
      "with --ep: each rank also holds copies of R experts of the others' (the hottest by "
      "--experts-by-load's "
      "STATS, else spread), and a token's experts held twice run on the less busy holder (default 0; with "
      "--shards, shard copies them)"},
     {"pp", "P", "pipeline stages (default: the world size / --tp or --ep; with --shards, the shards')"},
     {"layers", "a,b,...", "layers per pipeline stage, first stage first (default: balanced)"},
     {"sync-dtype", "f32|bf16|q8_0", kSyncDTypeFlagHelp},
     {"output", "text|ids", "print text or token ids (default text)"},
     {"weights", "copy|mapped",
      "copy weights into memory, or use them in place in the file's pages (loads ~10x faster; decode "
      "is as fast only where the page cache holds the file in huge pages) (default copy)"},
     {"trace", "FILE", "write a Chrome trace of every rank's time"},
     {"routing-stats", "FILE",
      "a mixture of experts: write how many positions (prompts and generated) the router sent to each "
      "expert of each layer, as JSON (docs/engine.md; shard/infer/serve --experts-by-load read it)"},
     {"dump-logits", "FILE", "write every sampled step's logits (f32, native order)"},
     {"failover", "",
      "when a rank other than 0 is lost, a standby rank takes its place (launch --standby) and the grid "
      "stays, or else the others carry on without it, re-planning over themselves: --tp/--ep T kept if it "
      "divides their count and the model takes it, else the largest that does (down to 1: a pipeline); "
      "every prompt continues, greedy output as undisturbed with the same T (a smaller T sums in another "
      "order: not guaranteed bit for bit) (run under launch --failover; with --model only, no --layers "
      "or --fetch-weights)"}}};

struct InferOptions {
  ModelChoice model;
  std::optional<std::string> tokenizer;
  std::vector<std::string> text_prompts;
  std::vector<std::vector<int32_t>> id_prompts;
  std::vector<std::string> chats;  // user messages
  std::optional<std::string> system;
  std::optional<std::string> chat_template;  // a file
  GenerationOptions generation;
  std::optional<int64_t> context;
  int threads = 1;
  bool output_ids = false;
  WeightPlacement weight_placement = WeightPlacement::kCopy;
  SyncDType sync_dtype = SyncDType::kF32;
  std::optional<std::string> trace;
  std::optional<std::string> routing_stats;  // --routing-stats FILE
  std::optional<std::string> dump_logits;
  std::optional<std::string> draft;  // --draft
  bool failover = false;
};

Result<InferOptions> ParseOptions(const CommandLine& flags) {
  InferOptions options;
  Result<ModelChoice> model = ParseModelChoice(flags, "infer");
  if (!model) return model.error();
  options.model = *std::move(model);
  options.tokenizer = flags.Last("tokenizer");
  Result<int64_t> max_prompt_bytes =
      flags.Int("max-prompt-bytes", kDefaultMaxPromptBytes, 1, int64_t{1} << 32);
  if (!max_prompt_bytes) return max_prompt_bytes.error();
  const auto too_long = [&](const std::string& what) {
    return Error::InvalidArgument(what + " is longer than --max-prompt-bytes " +
                                  std::to_string(*max_prompt_bytes) + " (raise it to allow more)");
  };
  for (const std::string& text : flags.All("prompt")) {
    if (static_cast<int64_t>(text.size()) > *max_prompt_bytes) return too_long("--prompt");
    options.text_prompts.push_back(text);
  }
  for (const std::string& file : flags.All("prompts-file")) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error::Io("--prompts-file: cannot open '" + file + "'");
    // Read at most one byte past the limit, whatever the file claims (a pipe
    // or /dev/zero claims nothing).
    std::string text(static_cast<size_t>(*max_prompt_bytes) + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad()) return Error::Io("--prompts-file: cannot read '" + file + "'");
    if (in.gcount() > *max_prompt_bytes) return too_long("--prompts-file '" + file + "'");
    text.resize(static_cast<size_t>(in.gcount()));
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) options.text_prompts.push_back(line);
    }
  }
  for (const std::string& text : flags.All("prompt-ids")) {
    if (static_cast<int64_t>(text.size()) > *max_prompt_bytes) return too_long("--prompt-ids");
    Result<std::vector<int64_t>> ids = ParseIntList(text, "--prompt-ids");
    if (!ids) return ids.error();
    std::vector<int32_t>& prompt = options.id_prompts.emplace_back();
    for (int64_t id : *ids) {
      if (id < INT32_MIN || id > INT32_MAX)
        return Error::InvalidArgument("--prompt-ids: " + std::to_string(id) + " is not a token id");
      prompt.push_back(static_cast<int32_t>(id));
    }
  }
  for (const std::string& text : flags.All("chat")) {
    if (static_cast<int64_t>(text.size()) > *max_prompt_bytes) return too_long("--chat");
    options.chats.push_back(text);
  }
  options.system = flags.Last("system");
  options.chat_template = flags.Last("chat-template");
  if (options.chats.empty() && (options.system || options.chat_template)) {
    return Error::InvalidArgument("--system and --chat-template apply to --chat messages; none was given");
  }
  if (options.text_prompts.empty() && options.id_prompts.empty() && options.chats.empty()) {
    return Error::InvalidArgument("a prompt is required (see infer --help)");
  }
  Result<int64_t> max_new = flags.Int("max-new-tokens", 256, 0, 1 << 30);
  Result<double> temperature = flags.Double("temperature", 0.0, 0.0, 100.0);
  Result<int64_t> top_k = flags.Int("top-k", 0, 0, INT32_MAX);
  Result<double> top_p = flags.Double("top-p", 1.0, 1e-6, 1.0);
  Result<int64_t> seed = flags.Int("seed", 42, 0, INT64_MAX);
  Result<int64_t> threads = flags.Int("threads", DefaultThreads().threads, 1, 256);
  Result<int64_t> speculate = flags.Int("speculate", 0, 0, TransformerStage::kMaxPositionsPerCall - 1);
  for (const Error* error :
       {max_new ? nullptr : &max_new.error(), top_k ? nullptr : &top_k.error(),
        speculate ? nullptr : &speculate.error(), seed ? nullptr : &seed.error(),
        threads ? nullptr : &threads.error(), temperature ? nullptr : &temperature.error(),
        top_p ? nullptr : &top_p.error()}) {
    if (error != nullptr) return *error;
  }
  if (*temperature > 0 && *temperature < kMinTemperature) {
    return Error::InvalidArgument("--temperature: " + *flags.Last("temperature") + " is below " +
                                  std::to_string(kMinTemperature) + "; use 0 for greedy sampling");
  }
  options.generation.max_new_tokens = *max_new;
  options.generation.speculate = *speculate;
  options.draft = flags.Last("draft");
  if (options.draft && *speculate == 0) {
    return Error::InvalidArgument("--draft drafts for speculative decoding: add --speculate K");
  }
  if (flags.Has("context")) {
    Result<int64_t> context = flags.Int("context", 0, 1, INT32_MAX);
    if (!context) return context.error();
    options.context = *context;
  }
  options.generation.sampling = {static_cast<float>(*temperature), static_cast<int32_t>(*top_k),
                                 static_cast<float>(*top_p), static_cast<uint64_t>(*seed)};
  options.threads = static_cast<int>(*threads);
  const std::string output = flags.Last("output").value_or("text");
  if (output != "text" && output != "ids")
    return Error::InvalidArgument("--output: '" + output + "' is not text or ids");
  options.output_ids = output == "ids";
  Result<WeightPlacement> placement = ParseWeightPlacement(flags);
  if (!placement) return placement.error();
  options.weight_placement = *placement;
  Result<SyncDType> sync = ParseSyncDType(flags.Last("sync-dtype").value_or("f32"));
  if (!sync) return sync.error();
  options.sync_dtype = *sync;
  options.trace = flags.Last("trace");
  options.routing_stats = flags.Last("routing-stats");
  options.dump_logits = flags.Last("dump-logits");
  options.failover = flags.Has("failover");
  if (options.failover) {
    if (Status plan = CheckFailoverChoice(options.model); !plan) return plan.error();
  }
  return options;
}

// The leader's output: streams text for a single prompt (never splitting a
// UTF-8 character across writes), prints each of several prompts' text (or
// ids) in prompt order once all are done, and keeps the logits for
// --dump-logits. `tokenizer` may be null with `output_ids`.
class ConsoleOutput : public GenerationObserver {
 public:
  ConsoleOutput(const Tokenizer* tokenizer, const std::vector<std::vector<int32_t>>& prompts, bool output_ids,
                bool keep_logits)
      : tokenizer_(tokenizer),
        prompts_(prompts),
        output_ids_(output_ids),
        keep_logits_(keep_logits),
        text_(prompts.size()),
        logits_(prompts.size()) {
    CHECK(tokenizer_ != nullptr || output_ids_);
    if (output_ids_) return;
    // As llama2.c prints it: every prompt token but the first (usually BOS),
    // each decoded after its predecessor.
    for (size_t i = 0; i < prompts.size(); ++i) {
      for (size_t t = 1; t < prompts[i].size(); ++t)
        text_[i] += tokenizer_->Decode(prompts[i][t - 1], prompts[i][t]);
    }
    if (streaming()) Stream();
  }

  void OnLogits(int64_t sequence, std::span<const float> logits) override {
    if (keep_logits_) logits_[sequence].insert(logits_[sequence].end(), logits.begin(), logits.end());
  }

  void OnToken(int64_t sequence, int32_t previous, int32_t token) override {
    if (output_ids_) return;
    text_[sequence] += tokenizer_->Decode(previous, token);
    if (streaming()) Stream();
  }

  void OnSequenceDone(int64_t, FinishReason) override {}

  // After generation: the buffered outputs, in prompt order.
  void Finish(const GenerationReport& report) {
    for (size_t i = 0; i < prompts_.size(); ++i) {
      if (output_ids_) {
        std::string line;
        for (int32_t id : report.generated[i]) {
          if (!line.empty()) line += ' ';
          line += std::to_string(id);
        }
        Print(line + "\n");
      } else if (!streaming()) {
        Print(text_[i] + "\n");
      }
    }
    if (streaming()) Print(text_[0] + "\n");
  }

  Status WriteLogits(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    for (const std::vector<float>& logits : logits_) {
      out.write(reinterpret_cast<const char*>(logits.data()),
                static_cast<std::streamsize>(logits.size() * 4));
    }
    out.close();
    if (!out) return Error::Io("--dump-logits: cannot write '" + path + "'");
    return {};
  }

 private:
  bool streaming() const { return !output_ids_ && prompts_.size() == 1; }
  // Prints the complete characters of the streamed text, keeping back the
  // first bytes of one still missing its last.
  void Stream() {
    const size_t complete = Utf8CompletePrefixLength(text_[0]);
    Print(text_[0].substr(0, complete));
    text_[0].erase(0, complete);
  }
  static void Print(const std::string& text) {
    // A reader that stops reading (a paused terminal, a full pipe) blocks
    // this thread without it being hung (base/progress.h).
    const WaitingOutside waiting;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }

  const Tokenizer* tokenizer_;
  const std::vector<std::vector<int32_t>>& prompts_;
  const bool output_ids_;
  const bool keep_logits_;
  std::vector<std::string> text_;
  std::vector<std::vector<float>> logits_;
};

// How long the leader waits for the survivors of a lost rank to report
// (Regroup's window), as serve does.
constexpr std::chrono::milliseconds kRegroupWindow{5000};

void PrintStats(const GenerationReport& report, const ShardPlan& plan) {
  const int64_t decoded = report.generated_tokens - static_cast<int64_t>(report.generated.size());
  std::fprintf(
      stderr,
      "prompt tokens: %lld, generated tokens: %lld, time to first token: %.2f ms, decode: %.1f tok/s, "
      "total: %.3f s (%.1f generated tok/s)\n",
      static_cast<long long>(report.prompt_tokens), static_cast<long long>(report.generated_tokens),
      report.time_to_first_token_seconds * 1e3,
      report.decode_seconds > 0 ? std::max<int64_t>(decoded, 0) / report.decode_seconds : 0.0,
      report.total_seconds, report.total_seconds > 0 ? report.generated_tokens / report.total_seconds : 0.0);
  if (report.drafted_tokens > 0) {
    std::fprintf(stderr, "speculation: %lld drafted tokens, %lld accepted (%.1f%%)\n",
                 static_cast<long long>(report.drafted_tokens),
                 static_cast<long long>(report.accepted_tokens),
                 100.0 * report.accepted_tokens / report.drafted_tokens);
  }
  for (size_t rank = 0; rank < report.timelines.size(); ++rank) {
    const Timeline& t = report.timelines[rank];
    const RankShard& part = plan.ranks[rank];
    const std::string experts = plan.expert_parallel ? ", " + ExpertsText(part) : "";
    std::fprintf(
        stderr,
        "rank %zu (layers [%lld, %lld), heads [%lld, %lld)%s, classifier rows [%lld, %lld)): compute "
        "%.3f s, send %.3f s, recv %.3f s, wait %.3f s\n",
        rank, static_cast<long long>(part.layers.begin), static_cast<long long>(part.layers.end),
        static_cast<long long>(part.heads.begin), static_cast<long long>(part.heads.end), experts.c_str(),
        static_cast<long long>(part.classifier_rows.begin), static_cast<long long>(part.classifier_rows.end),
        t.seconds(SpanKind::kCompute), t.seconds(SpanKind::kSend), t.seconds(SpanKind::kRecv),
        t.seconds(SpanKind::kWait));
  }
}

// The text of every --chat conversation, formatted by the chat template
// (--chat-template, else the tokenizer's tokenizer_config.json), ending with
// the generation prompt. The template writes its own BOS, so the text is
// encoded without the tokenizer's.
Result<std::vector<std::string>> RenderChats(const InferOptions& options, const LoadedTokenizer& tokenizer) {
  const std::optional<TokenizerChatConfig>& config = tokenizer.chat_config;
  Result<ChatTemplate> chat = LoadChatTemplate(options.chat_template, tokenizer);
  if (!chat) return chat.error().Prefixed(options.chat_template ? "" : "--chat: ");
  const std::string where = options.chat_template.value_or(
      "the chat_template of the tokenizer_config.json beside " + tokenizer.source);
  std::vector<std::string> texts;
  for (const std::string& message : options.chats) {
    ChatRequest request;
    if (options.system) request.messages.push_back({"system", *options.system});
    request.messages.push_back({"user", message});
    request.add_generation_prompt = true;
    if (config) {
      request.bos_token = config->bos_token;
      request.eos_token = config->eos_token;
    }
    Result<std::string> text = chat->Render(request);
    if (!text) return text.error().Prefixed(where + ": ");
    texts.push_back(std::move(*text));
  }
  return texts;
}

// Everything a rank needs before it talks to the others; every input error
// surfaces here, on every rank, before any networking.
struct PreparedRank {
  RankSetup setup;  // its tokenizer is null when neither prompts nor output are text
  std::vector<std::vector<int32_t>> prompts;
  int64_t context_length = 0;  // KV-cache positions per sequence
  StageWeights weights;
  std::optional<DraftSetup> draft;  // rank 0 with --draft
};

// What this rank computes, for the rendezvous to compare across ranks (see
// RendezvousOptions::fingerprint): ranks that disagree would print mixed or
// wrong output, so the job refuses to start, naming the entry that differs.
std::map<std::string, std::string> RunFingerprint(const InferOptions& options, const PreparedRank& prepared) {
  std::ostringstream prompts, generation;
  for (const std::vector<int32_t>& prompt : prepared.prompts) {
    for (int32_t id : prompt) prompts << id << " ";
    prompts << "\n";
  }
  const SamplingOptions& sampling = options.generation.sampling;
  generation << "context=" << prepared.context_length << " stop_ids=";
  for (int32_t id : prepared.setup.stop_ids) generation << id << ",";
  generation << " max_new_tokens=" << options.generation.max_new_tokens
             << " temperature=" << sampling.temperature << " top_k=" << sampling.top_k
             << " top_p=" << sampling.top_p << " seed=" << sampling.seed
             << " speculate=" << options.generation.speculate << " draft_model=" << options.draft.has_value()
             << " sync_dtype=" << SyncDTypeName(options.sync_dtype) << " routing_stats="
             << options.routing_stats.has_value()
             // Whether the logits are reported (--dump-logits) picks the
             // sampling exchange (Scheduler::SampleNext): every rank's must agree.
             << " report_logits=" << options.dump_logits.has_value();
  std::map<std::string, std::string> fingerprint = RankFingerprint(prepared.setup);
  fingerprint["prompts"] = ShortDigest(prompts.str());
  fingerprint["generation"] = generation.str();
  return fingerprint;
}

// Prepares rank `rank` over its view of the model (OpenRankModel, or a
// fetching rank's OpenReceivedRankModel).
Result<PreparedRank> Prepare(const InferOptions& options, RankModel model, int rank) {
  RankSetupOptions setup_options;
  setup_options.model = options.model;
  setup_options.tokenizer = options.tokenizer;
  setup_options.needs_tokenizer =
      !options.text_prompts.empty() || !options.chats.empty() || !options.output_ids;
  setup_options.context = options.context;
  Result<RankSetup> setup = OpenRank(setup_options, std::move(model));
  if (!setup) return setup.error();
  PreparedRank prepared;
  prepared.setup = std::move(*setup);
  const ModelConfig& config = prepared.setup.config;
  const LoadedTokenizer& tokenizer = prepared.setup.tokenizer;
  prepared.prompts = options.id_prompts;
  for (const std::string& text : options.text_prompts) {
    std::vector<int32_t>& prompt = prepared.prompts.emplace_back();
    if (tokenizer.bos_id) prompt.push_back(*tokenizer.bos_id);
    const std::vector<int32_t> ids = tokenizer.tokenizer->Encode(text);
    prompt.insert(prompt.end(), ids.begin(), ids.end());
  }
  if (!options.chats.empty()) {
    Result<std::vector<std::string>> chats = RenderChats(options, tokenizer);
    if (!chats) return chats.error();
    for (const std::string& text : *chats) prepared.prompts.push_back(tokenizer.tokenizer->Encode(text));
  }
  prepared.context_length =
      ContextLength(prepared.prompts, options.generation.max_new_tokens, prepared.setup.context_limit);
  if (Status fits = config.CheckContextFits(prepared.context_length); !fits) return fits.error();
  if (Status valid = ValidatePrompts(prepared.prompts, config, prepared.context_length); !valid) {
    return valid.error();
  }

  auto weights = LoadRankWeights(prepared.setup.model, rank, options.weight_placement, "infer");
  if (!weights) return weights.error();
  prepared.weights = std::move(*weights);
  if (options.draft && rank == 0) {
    Result<DraftSetup> draft = LoadDraftModel(*options.draft, prepared.setup, prepared.context_length,
                                              options.weight_placement, "infer");
    if (!draft) return draft.error();
    prepared.draft = std::move(*draft);
  }
  return prepared;
}

// Runs the generator loop over `group`; on the leader, `prompts` (the
// source, which keeps the tokens across failovers) and `output` are set.
Status Run(const InferOptions& options, PreparedRank& prepared, ProcessGroup& group, FixedPrompts* prompts,
           ConsoleOutput* output) {
  ThreadPool pool(options.threads);
  Result<std::optional<TensorParallelGroup>> tensor_parallel =
      MakeTensorParallelGroup(group, prepared.setup.model.plan, options.sync_dtype);
  if (!tensor_parallel) return tensor_parallel.error();
  TensorParallelGroup* stage_group = *tensor_parallel ? &**tensor_parallel : nullptr;
  const int slots = prepared.setup.model.plan.pp == 1 ? 1 : static_cast<int>(prepared.prompts.size());
  TransformerStage stage(prepared.setup.config, std::move(prepared.weights), slots, prepared.context_length,
                         pool, stage_group);
  std::optional<TransformerStage> draft;
  if (prepared.draft) {
    draft.emplace(prepared.draft->setup.config, std::move(prepared.draft->weights), slots,
                  prepared.draft->context_length, pool);
  }
  Timeline timeline(options.trace.has_value());
  GeneratorSettings settings = options.generation;
  settings.stop_ids = prepared.setup.stop_ids;
  settings.report_logits = options.dump_logits.has_value();
  settings.draft_model = options.draft.has_value();
  settings.draft = draft ? &*draft : nullptr;
  auto report = RunGenerator(group, prepared.setup.model.plan, stage, stage_group, settings, prompts, prompts,
                             timeline);
  if (!report) return report.error();
  Result<std::vector<std::vector<std::byte>>> routed =
      options.routing_stats
          ? group.gather(0, EncodeStageCounts(stage.RoutingCounts()))
          : Result<std::vector<std::vector<std::byte>>>(std::vector<std::vector<std::byte>>{});
  if (!routed) return routed.error().Prefixed("gather routing counts on rank 0: ");
  if (!group.is_leader()) return {};
  report->generated = prompts->generated();
  output->Finish(*report);
  PrintStats(*report, prepared.setup.model.plan);
  if (options.dump_logits) {
    if (Status written = output->WriteLogits(*options.dump_logits); !written) return written;
  }
  if (options.trace) {
    std::ofstream trace(*options.trace);
    trace << ChromeTraceJson(report->timelines);
    trace.close();
    if (!trace) return Error::Io("--trace: cannot write '" + *options.trace + "'");
  }
  if (options.routing_stats) {
    const ModelConfig& config = prepared.setup.config;
    Result<RoutingCounts> counts = GatherRoutingCounts(config, prepared.setup.model.plan, *routed);
    if (!counts) return counts.error();
    std::ofstream file(*options.routing_stats);
    file << RoutingStatsToJson(config, *counts);
    file.close();
    if (!file) return Error::Io("--routing-stats: cannot write '" + *options.routing_stats + "'");
  }
  return {};
}

// With --fetch-weights, what the ranks compare at the rendezvous, where the
// ranks other than 0 have no model yet: each compares its RunFingerprint
// with rank 0's once it has received its weights (FetchWeights).
const std::map<std::string, std::string> kFetchingFingerprint = {
    {"weights", "sent by rank 0 (--fetch-weights)"}};

// --fetch-weights after the rendezvous: rank 0 (`prepared` set) sends every
// other rank its shard; each other rank receives it (or reads its cache),
// prepares over it into `prepared`, and checks that it runs what rank 0 runs.
Status FetchWeights(const InferOptions& options, std::optional<PreparedRank>& prepared, ProcessGroup& group) {
  if (group.is_leader()) {
    const RankModel& model = prepared->setup.model;
    return SendRankWeights(group, *model.mapped_model, model.plan, options.model.cache,
                           RunFingerprint(options, *prepared), "infer");
  }
  Result<ReceivedWeights> received = ReceiveRankWeights(group, options.model.cache, "infer");
  if (!received) return received.error();
  InferOptions own = options;
  own.model.model.clear();  // rank 0's path: no tokenizer is looked for beside it here
  Result<RankModel> model =
      OpenReceivedRankModel(std::move(received->file), own.model, group.rank(), group.world_size(),
                            received->leader_fingerprint["weights"]);
  if (!model) return model.error();
  Result<PreparedRank> mine = Prepare(own, std::move(*model), group.rank());
  if (!mine) return mine.error();
  if (const std::string difference =
          FingerprintDifference(group.rank(), RunFingerprint(own, *mine), received->leader_fingerprint);
      !difference.empty()) {
    return Error::InvalidArgument(difference);
  }
  prepared = std::move(*mine);
  return {};
}

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) {
  using namespace inferno;
  FLAGS_logtostderr = true;  // warnings to stderr as before, no log files
  google::InitGoogleLogging(argv[0]);
  Result<CommandLine> flags = CommandLine::Parse(argc, argv, kSpec);
  if (flags && flags->help_requested()) {
    std::fputs(Usage(kSpec).c_str(), stdout);
    return 0;
  }
  // Before loading, which can take long: a rank whose launcher is gone stops.
  if (Status watched = WatchLauncherLifeline(std::getenv); !watched) {
    std::fprintf(stderr, "infer: %s\n", watched.error().ToString().c_str());
    return 2;
  }
  Result<RendezvousConfig> where = ReadRendezvousConfig(std::getenv);
  if (!where) {
    std::fprintf(stderr, "infer: %s\n", where.error().ToString().c_str());
    return 2;
  }
  const int rank = where->rank;
  Result<InferOptions> options = flags ? ParseOptions(*flags) : Result<InferOptions>(flags.error());
  if (!options) {
    std::fprintf(stderr, "infer: rank %d: %s\n", rank, options.error().ToString().c_str());
    return 2;
  }
  RendezvousConfig config = *where;
  int first_generation = 0;
  if (where->standby) {
    if (!options->failover) {
      std::fprintf(stderr, "infer: a standby rank (INFERNO_STANDBY) needs --failover\n");
      return 2;
    }
    // SIGTERM (launch stopping the job) ends a waiting standby.
    Result<std::optional<Regrouped>> place = AwaitPlace(*where, [] { return false; });
    if (!place || !*place) {
      std::fprintf(stderr, "infer: standby rank %d: %s\n", *where->standby,
                   place ? "no place given" : place.error().ToString().c_str());
      return 1;
    }
    config = (*place)->config;
    first_generation = (*place)->generation;
    std::fprintf(stderr, "infer: standby rank %d takes rank %d's place in generation %d\n", *where->standby,
                 (*place)->old_ranks[config.rank], first_generation);
  }
  // The leader's prompts, source and output outlive every generation.
  std::vector<std::vector<int32_t>> prompts;
  std::optional<ConsoleOutput> output;
  std::optional<FixedPrompts> source;
  int standbys_left = where->standby_ranks;
  for (int generation = first_generation;; ++generation) {
    const bool fetching = options->model.fetch && config.rank != 0;
    // After a regroup every member re-plans the job's grid over the members
    // (FailoverGrid, as serve does): the same grid while standbys fill the
    // lost places.
    Result<ModelChoice> grid = generation == 0 ? Result<ModelChoice>(options->model)
                                               : FailoverGrid(options->model, config.world_size);
    if (!grid) {
      std::fprintf(stderr, "infer: rank %d: %s\n", config.rank, grid.error().ToString().c_str());
      return 1;
    }
    std::optional<PreparedRank> prepared;
    if (!fetching) {
      Result<RankModel> model = OpenRankModel(*grid, config.rank, config.world_size);
      Result<PreparedRank> mine =
          model ? Prepare(*options, std::move(*model), config.rank) : Result<PreparedRank>(model.error());
      if (!mine) {
        std::fprintf(stderr, "infer: rank %d: %s\n", config.rank, mine.error().ToString().c_str());
        return 1;
      }
      prepared = std::move(*mine);
    }
    RendezvousOptions rendezvous;
    rendezvous.fingerprint =
        options->model.fetch ? kFetchingFingerprint : RunFingerprint(*options, *prepared);
    Result<ProcessGroup> group = Join(config, rendezvous);
    if (!group) {
      std::fprintf(stderr, "infer: rank %d: joining the process group: %s\n", config.rank,
                   group.error().ToString().c_str());
      return 1;
    }
    if (generation > 0 && group->is_leader()) {
      const ShardPlan& plan = prepared->setup.model.plan;
      std::fprintf(stderr, "infer: rank 0: generation %d formed over %d ranks (%s)\n", generation,
                   config.world_size, GridText(plan).c_str());
    }
    Status status = options->model.fetch ? FetchWeights(*options, prepared, *group) : Status{};
    // Only the leader prints: the console output starts streaming when made.
    if (status && group->is_leader() && !output) {
      prompts = prepared->prompts;
      output.emplace(prepared->setup.tokenizer.tokenizer.get(), prompts, options->output_ids,
                     options->dump_logits.has_value());
      source.emplace(prompts, options->generation.max_new_tokens, options->generation.sampling, &*output);
    }
    if (status)
      status = Run(*options, *prepared, *group, source ? &*source : nullptr, output ? &*output : nullptr);
    if (status) return 0;
    std::fprintf(stderr, "infer: rank %d: %s\n", config.rank, status.error().ToString().c_str());
    // The other ranks fail at once with this reason rather than time out one
    // after the other, each naming the neighbour it waited for.
    group->transport()->Abort(status.error().ToString());
    if (!options->failover) return 1;
    const auto lost_at = std::chrono::steady_clock::now();
    Result<Regrouped> regrouped = Regroup(config, generation + 1, kRegroupWindow, standbys_left);
    if (!regrouped) {
      std::fprintf(stderr, "infer: rank %d: %s\n", config.rank, regrouped.error().ToString().c_str());
      return 1;
    }
    if (source) {
      standbys_left -= regrouped->standbys_taken;
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - lost_at;
      // Each prompt's tokens before the loss, which the continuation keeps.
      std::string kept;
      for (const std::vector<int32_t>& tokens : source->generated()) {
        kept += (kept.empty() ? "" : ", ") + std::to_string(tokens.size());
      }
      std::fprintf(
          stderr,
          "infer: rank 0: generation %d: %d ranks (%d standby rank(s) took a place) %.3f s after the "
          "loss; %lld prompts continue (tokens kept: %s)\n",
          generation + 1, regrouped->config.world_size, regrouped->standbys_taken, took.count(),
          static_cast<long long>(source->Continue()), kept.c_str());
    }
    config = regrouped->config;
  }
}
