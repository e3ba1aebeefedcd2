#include "engine/generator.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <variant>

#include <glog/logging.h>

#include "engine/pipeline_protocol.h"

namespace inferno {
namespace {

using Clock = Timeline::Clock;

double Seconds(Clock::time_point begin, Clock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}

struct Sequence {
  const std::vector<int32_t>* prompt = nullptr;
  int64_t pos = 0;        // positions this stage has run
  int32_t previous = 0;   // the last token fed or sampled
  int64_t generated = 0;  // tokens sampled and kept (leader)
  Sampler sampler;
};

// One rank's part of one Generate call.
class PipelineRun {
 public:
  PipelineRun(ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
              const std::vector<std::vector<int32_t>>& prompts, const GenerationOptions& options,
              GenerationObserver* observer, Timeline& timeline)
      : group_(group),
        plan_(plan),
        stage_(stage),
        tensor_parallel_(stage.tensor_parallel()),
        ring_rows_(plan.TpClassifierRows(stage.part().tp_index)),
        options_(options),
        observer_(observer),
        timeline_(timeline),
        dim_(stage.config().hidden_size),
        vocab_(stage.config().vocab_size),
        hidden_(stage.max_positions_per_call() * dim_) {
    for (const std::vector<int32_t>& prompt : prompts) {
      sequences_.push_back(
          {&prompt, 0, prompt.back(), 0, Sampler(options.sampling, static_cast<int32_t>(vocab_))});
    }
    report_.generated.resize(prompts.size());
    classify_.resize(dim_ + ring_rows_.size());
    if (tensor_parallel_) {
      // Every ring's rows, padded to the longest (index 0's), for all_gather.
      gathered_width_ = plan_.TpClassifierRows(0).size();
      classify_padded_.resize(gathered_width_);
      logits_.resize(vocab_);
    }
  }

  Result<GenerationReport> Run() {
    start_ = Clock::now();
    Status status = plan_.pp == 1 ? RunAlone() : RunPipelined();
    if (!status) return status.error();
    const Clock::time_point end = Clock::now();
    if (group_.is_leader()) {
      for (const Sequence& sequence : sequences_) report_.prompt_tokens += sequence.prompt->size();
      report_.total_seconds = Seconds(start_, end);
      report_.decode_seconds = first_token_ ? Seconds(*first_token_, end) : 0.0;
    }
    Result<std::vector<std::vector<std::byte>>> gathered = group_.gather(0, timeline_.Serialize());
    if (!gathered) return Failure("gather timelines on", 0, gathered.error());
    for (const std::vector<std::byte>& bytes : *gathered) {
      Result<Timeline> decoded = Timeline::Deserialize(bytes);
      if (!decoded) return decoded.error();
      report_.timelines.push_back(std::move(*decoded));
    }
    return std::move(report_);
  }

 private:
  // A received message, decoded: `message.payload` views `bytes`, the
  // transport's buffer, which lives as long as this does.
  struct Received {
    Payload bytes;
    PipelineMessage message;
  };

  int slot(int sequence) const { return stage_.num_slots() == 1 ? 0 : sequence; }
  // The ring of this rank's tensor-parallel index: each stage sends to the
  // next, the last stage to the first.
  int successor() const {
    const RankShard& part = stage_.part();
    return plan_.RankOf((part.stage + 1) % plan_.pp, part.tp_index);
  }
  int predecessor() const {
    const RankShard& part = stage_.part();
    return plan_.RankOf((part.stage + plan_.pp - 1) % plan_.pp, part.tp_index);
  }

  Error Failure(const std::string& op, int peer, const Error& error) const {
    return error.Prefixed(op + " rank " + std::to_string(peer) + ": ");
  }
  Error Malformed(const std::string& what) const {
    return Error::Corruption("malformed message from rank " + std::to_string(predecessor()) + ": " + what);
  }

  // Runs the stage's layers over positions x (n, dim) of `sequence`.
  Status Forward(int sequence, std::span<float> x) {
    Sequence& s = sequences_[sequence];
    if (Status done = stage_.Forward(slot(sequence), s.pos, x, &timeline_, sequence); !done) return done;
    s.pos += static_cast<int64_t>(x.size()) / dim_;
    return {};
  }

  // Embeds `tokens` (first stage) into the hidden buffer and runs the
  // stage's layers; returns the hidden states (n, dim).
  Result<std::span<float>> EmbedAndForward(int sequence, std::span<const int32_t> tokens) {
    std::span<float> x = std::span<float>(hidden_).first(tokens.size() * dim_);
    if (Status embedded = stage_.Embed(tokens, x); !embedded) return embedded.error();
    if (Status done = Forward(sequence, x); !done) return done.error();
    return x;
  }

  // Leader: whether `sequence` samples another token.
  bool SamplesAnother(int sequence) const { return sequences_[sequence].generated < options_.max_new_tokens; }

  // Leader: the end of `sequence`; returns -1 (the stop token).
  int32_t StopSequence(int sequence) {
    if (observer_ != nullptr) observer_->OnSequenceDone(sequence);
    return -1;
  }

  // Last stage: the next token of `sequence` from the logits of the ring's
  // rows (classify_ after dim), which it may overwrite; reports it, and
  // returns it, or -1 when the sequence stops. Under tensor parallelism every
  // rank of the last stage calls it and gets the same token: greedy without
  // reported logits exchanges each rank's best (value, id), otherwise every
  // rank gathers the whole vector and samples it with the same sampler.
  // Precondition: SamplesAnother(sequence).
  Result<int32_t> SampleNext(int sequence) {
    Sequence& s = sequences_[sequence];
    const std::span<float> ring_logits = std::span<float>(classify_).subspan(dim_, ring_rows_.size());
    int32_t token;
    if (!tensor_parallel_) {
      TimedScope scope(timeline_, SpanKind::kCompute, "sample", sequence);
      if (observer_ != nullptr && options_.report_logits) observer_->OnLogits(sequence, ring_logits);
      token = s.sampler.Sample(ring_logits);
    } else if (options_.sampling.temperature == 0.0f && !options_.report_logits) {
      Result<int32_t> best = GroupArgMax(sequence, ring_logits);
      if (!best) return best.error();
      token = *best;
    } else {
      if (Status gathered = GatherLogits(sequence, ring_logits); !gathered) return gathered.error();
      TimedScope scope(timeline_, SpanKind::kCompute, "sample", sequence);
      if (observer_ != nullptr && options_.report_logits) observer_->OnLogits(sequence, logits_);
      token = s.sampler.Sample(logits_);
    }
    if (!first_token_) {
      first_token_ = Clock::now();
      report_.time_to_first_token_seconds = Seconds(start_, *first_token_);
    }
    if (std::find(options_.stop_ids.begin(), options_.stop_ids.end(), token) != options_.stop_ids.end()) {
      return StopSequence(sequence);
    }
    ++s.generated;
    ++report_.generated_tokens;
    report_.generated[sequence].push_back(token);
    if (observer_ != nullptr) observer_->OnToken(sequence, s.previous, token);
    s.previous = token;
    const bool context_full = s.pos >= stage_.context_length();
    if (!SamplesAnother(sequence) || context_full) return StopSequence(sequence);
    return token;
  }

  // The first id of the largest logit over the whole vocabulary, from each
  // tensor-parallel rank's best of `ring_logits`: the greedy token, as
  // Sampler picks it, without moving the logits.
  Result<int32_t> GroupArgMax(int sequence, std::span<const float> ring_logits) {
    float best[2];
    {
      TimedScope scope(timeline_, SpanKind::kCompute, "sample", sequence);
      const auto top = std::max_element(ring_logits.begin(), ring_logits.end());
      best[0] = *top;
      // Exact: ids are below 2^24 (checked in Generate).
      best[1] = static_cast<float>(ring_rows_.begin + (top - ring_logits.begin()));
    }
    TimedScope scope(timeline_, SpanKind::kWait, "gather best", sequence);
    Result<std::vector<float>> all = tensor_parallel_->all_gather(best);
    if (!all) return all.error().Prefixed("tensor-parallel all_gather of the best logits: ");
    // Ranks hold increasing ids, so the first largest value is the first id.
    size_t winner = 0;
    for (size_t i = 2; i < all->size(); i += 2) {
      if ((*all)[i] > (*all)[winner]) winner = i;
    }
    return static_cast<int32_t>((*all)[winner + 1]);
  }

  // logits_ (vocab) = every tensor-parallel rank's `ring_logits`.
  Status GatherLogits(int sequence, std::span<const float> ring_logits) {
    TimedScope scope(timeline_, SpanKind::kWait, "gather logits", sequence);
    std::copy(ring_logits.begin(), ring_logits.end(), classify_padded_.begin());
    Result<std::vector<float>> all = tensor_parallel_->all_gather(classify_padded_);
    if (!all) return all.error().Prefixed("tensor-parallel all_gather of the logits: ");
    for (int t = 0; t < plan_.tp; ++t) {
      const RowRange rows = plan_.TpClassifierRows(t);
      std::copy_n(all->data() + t * gathered_width_, rows.size(), logits_.data() + rows.begin);
    }
    return {};
  }

  Status RunAlone() {
    for (size_t sequence = 0; sequence < sequences_.size(); ++sequence) {
      const int id = static_cast<int>(sequence);
      const std::vector<int32_t>& prompt = *sequences_[sequence].prompt;
      Result<std::span<float>> x = std::span<float>();
      for (size_t begin = 0; begin < prompt.size(); begin += stage_.max_positions_per_call()) {
        const size_t n = std::min<size_t>(stage_.max_positions_per_call(), prompt.size() - begin);
        x = EmbedAndForward(id, std::span<const int32_t>(prompt).subspan(begin, n));
        if (!x) return x.error();
      }
      if (!SamplesAnother(id)) {
        StopSequence(id);
        continue;
      }
      // The classifier writes the logits straight into classify_, which the
      // sampler may overwrite: no per-token copy.
      const std::span<float> normed = std::span<float>(classify_).first(dim_);
      const std::span<float> logits = std::span<float>(classify_).subspan(dim_, ring_rows_.size());
      while (true) {
        {
          TimedScope scope(timeline_, SpanKind::kCompute, "classifier", id);
          stage_.FinalNorm(x->last(dim_), normed);
          stage_.ClassifierSlice(normed, logits);
        }
        const Result<int32_t> token = SampleNext(id);
        if (!token) return token.error();
        if (*token < 0) break;
        x = EmbedAndForward(id, std::span<const int32_t>(&*token, 1));
        if (!x) return x.error();
      }
    }
    return {};
  }

  // Sends `header` and `payload` to the ring successor as one message; the
  // transport copies both straight from here into its buffers.
  Status Send(const char* label, const MessageHeader& header, std::span<const float> payload) {
    TimedScope scope(timeline_, SpanKind::kSend, label, SequenceOf(header));
    const int to = successor();
    const std::array<std::byte, kMessageHeaderBytes> header_bytes = EncodeMessageHeader(header);
    if (Status sent = group_.send_bytes(to, kMessageTag, header_bytes, std::as_bytes(payload)); !sent) {
      return Failure(std::string(label) + ": send to", to, sent.error());
    }
    return {};
  }

  Status SendHidden(int sequence, int64_t pos, std::span<const float> x) {
    return Send("send hidden",
                HiddenMessage{sequence, static_cast<int32_t>(pos), static_cast<int32_t>(x.size() / dim_)}, x);
  }

  // Waits for the next message from the ring predecessor; decodes its header
  // and checks its sequence. The payload is not copied.
  Result<Received> Receive() {
    const int from = predecessor();
    TimedScope scope(timeline_, SpanKind::kWait, "wait", -1);
    Result<Payload> bytes = group_.recv_payload(from, kMessageTag);
    if (!bytes) return Failure("receive from", from, bytes.error());
    Result<PipelineMessage> message = DecodePipelineMessage(bytes->bytes());
    if (!message) return Malformed(message.error().message);
    const MessageHeader& header = message->header;
    if (SequenceOf(header) >= static_cast<int>(sequences_.size())) {
      return Malformed("kind " + std::to_string(static_cast<int32_t>(KindOf(header))) + ", sequence " +
                       std::to_string(SequenceOf(header)));
    }
    return Received{std::move(*bytes), std::move(*message)};
  }

  // Copies `message`'s payload into `out`, which it must fill exactly: the
  // one copy of a hop on the receiving side (the stage computes in place).
  Status TakePayload(const char* label, const PipelineMessage& message, std::span<float> out) {
    TimedScope scope(timeline_, SpanKind::kRecv, label, SequenceOf(message.header));
    const size_t floats = message.payload_floats();
    if (floats != out.size()) {
      return Malformed(std::string(label) + " of " + std::to_string(floats) + " floats, expected " +
                       std::to_string(out.size()));
    }
    if (!out.empty()) std::memcpy(out.data(), message.payload.data(), out.size_bytes());
    return {};
  }

  // Every rank with W > 1: handles the messages from the ring predecessor, in
  // order, until every sequence has stopped.
  Status RunPipelined() {
    if (stage_.is_first()) {
      for (size_t sequence = 0; sequence < sequences_.size(); ++sequence) {
        const int id = static_cast<int>(sequence);
        const std::vector<int32_t>& prompt = *sequences_[sequence].prompt;
        for (size_t begin = 0; begin < prompt.size(); begin += stage_.max_positions_per_call()) {
          const size_t n = std::min<size_t>(stage_.max_positions_per_call(), prompt.size() - begin);
          Result<std::span<float>> x =
              EmbedAndForward(id, std::span<const int32_t>(prompt).subspan(begin, n));
          if (!x) return x.error();
          if (Status sent = SendHidden(id, static_cast<int64_t>(begin), *x); !sent) return sent;
        }
      }
    }
    for (size_t running = sequences_.size(); running > 0;) {
      Result<Received> received = Receive();
      if (!received) return received.error();
      const PipelineMessage& message = received->message;
      Status handled =
          std::visit([&](const auto& header) { return Handle(header, message, running); }, message.header);
      if (!handled) return handled;
    }
    return {};
  }

  // First stage: the next token of a sequence, or its end.
  Status Handle(const TokenMessage& header, const PipelineMessage& message, size_t& running) {
    if (!stage_.is_first() || header.token >= vocab_ || message.payload_floats() != 0) {
      return Malformed("token " + std::to_string(header.token) + " with " +
                       std::to_string(message.payload_floats()) + " floats");
    }
    if (header.token < 0) {
      --running;
      return SendHidden(header.sequence, 0, {});
    }
    const int64_t pos = sequences_[header.sequence].pos;
    Result<std::span<float>> x = EmbedAndForward(header.sequence, std::span<const int32_t>(&header.token, 1));
    if (!x) return x.error();
    return SendHidden(header.sequence, pos, *x);
  }

  // Hidden states from the previous stage; the last stage starts the
  // classifier once a sequence's prompt is in.
  Status Handle(const HiddenMessage& header, const PipelineMessage& message, size_t& running) {
    Sequence& s = sequences_[header.sequence];
    if (stage_.is_first() || (header.n > 0 && header.pos != s.pos) || header.n < 0 ||
        header.n > stage_.max_positions_per_call()) {
      return Malformed("hidden states of sequence " + std::to_string(header.sequence) + " at position " +
                       std::to_string(header.pos) + ", " + std::to_string(header.n) + " positions");
    }
    if (header.n == 0) {
      if (message.payload_floats() != 0) return Malformed("a stop with a payload");
      --running;
      return stage_.is_last() ? Status{} : SendHidden(header.sequence, 0, {});
    }
    const std::span<float> x = std::span<float>(hidden_).first(header.n * dim_);
    if (Status taken = TakePayload("recv hidden", message, x); !taken) return taken;
    if (Status done = Forward(header.sequence, x); !done) return done;
    if (!stage_.is_last()) return SendHidden(header.sequence, header.pos, x);
    if (s.pos < static_cast<int64_t>(s.prompt->size())) return {};
    return StartClassifier(header.sequence, x.last(dim_));
  }

  // Last stage: sends the final-normed `hidden` (dim) of `sequence` around
  // the ring — or, when the sequence samples no more, stops it.
  Status StartClassifier(int sequence, std::span<const float> hidden) {
    if (!SamplesAnother(sequence)) return SendToken(sequence, StopSequence(sequence));
    const std::span<float> normed = std::span<float>(classify_).first(dim_);
    {
      TimedScope scope(timeline_, SpanKind::kCompute, "final norm", sequence);
      stage_.FinalNorm(hidden, normed);
    }
    return Send("send classify", ClassifyMessage{sequence, 0}, normed);
  }

  // Appends the logits of this rank's rows to a classify message; passes it
  // on, or on the last stage, where they complete the ring's rows, samples
  // and sends the token on. The last stage computes its rows only now, not
  // while the others compute theirs: its units of work stay short, so a
  // sequence whose logits are back waits less for it.
  Status Handle(const ClassifyMessage& header, const PipelineMessage& message, size_t& /*running*/) {
    // Rows relative to the ring's first.
    const RowRange rows{stage_.classifier_rows().begin - ring_rows_.begin,
                        stage_.classifier_rows().end - ring_rows_.begin};
    if (header.rows != rows.begin) {
      return Malformed("logits of " + std::to_string(header.rows) + " rows, expected " +
                       std::to_string(rows.begin));
    }
    const std::span<float> classify = std::span<float>(classify_).first(dim_ + rows.end);
    if (Status taken = TakePayload("recv classify", message, classify.first(dim_ + rows.begin)); !taken) {
      return taken;
    }
    {
      TimedScope scope(timeline_, SpanKind::kCompute, "classifier", header.sequence);
      stage_.ClassifierSlice(classify.first(dim_), classify.subspan(dim_ + rows.begin, rows.size()));
    }
    if (!stage_.is_last())
      return Send("send classify", ClassifyMessage{header.sequence, static_cast<int32_t>(rows.end)},
                  classify);
    const Result<int32_t> token = SampleNext(header.sequence);
    if (!token) return token.error();
    return SendToken(header.sequence, *token);
  }

  Status SendToken(int sequence, int32_t token) {
    return Send("send token", TokenMessage{sequence, token}, {});
  }

  ProcessGroup& group_;
  const ShardPlan& plan_;
  TransformerStage& stage_;
  std::optional<ProcessGroup> tensor_parallel_;  // the stage's group when tp > 1
  const RowRange ring_rows_;                     // the classifier rows of this rank's ring
  const GenerationOptions& options_;
  GenerationObserver* observer_;
  Timeline& timeline_;
  const int64_t dim_;
  const int64_t vocab_;
  std::vector<float> hidden_;  // (max_positions_per_call, dim)
  // (dim + ring_rows_.size()): the final-normed hidden state, then the
  // logits of the ring's rows (the sampler may overwrite them); with more
  // than one stage a classify message being extended.
  std::vector<float> classify_;
  int64_t gathered_width_ = 0;          // tp > 1: the longest ring's rows
  std::vector<float> classify_padded_;  // (gathered_width_) tp > 1: the ring's logits, padded
  std::vector<float> logits_;           // (vocab) tp > 1: the gathered logits
  std::vector<Sequence> sequences_;
  GenerationReport report_;
  Clock::time_point start_;
  std::optional<Clock::time_point> first_token_;
};

}  // namespace

Status ValidatePrompts(const std::vector<std::vector<int32_t>>& prompts, const ModelConfig& config,
                       int64_t context_length) {
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string which = "prompt " + std::to_string(i);
    if (prompts[i].empty()) return Error::InvalidArgument(which + " is empty");
    if (static_cast<int64_t>(prompts[i].size()) > context_length) {
      return Error::InvalidArgument(which + " has " + std::to_string(prompts[i].size()) +
                                    " tokens, longer than the context of " + std::to_string(context_length) +
                                    " positions");
    }
    for (int32_t id : prompts[i]) {
      if (id < 0 || id >= config.vocab_size) {
        return Error::InvalidArgument(which + ": token id " + std::to_string(id) +
                                      " is outside the vocabulary [0, " + std::to_string(config.vocab_size) +
                                      ")");
      }
    }
  }
  return {};
}

int64_t ContextLength(const std::vector<std::vector<int32_t>>& prompts, int64_t max_new_tokens,
                      int64_t limit) {
  int64_t longest = 0;
  for (const std::vector<int32_t>& prompt : prompts) longest = std::max<int64_t>(longest, prompt.size());
  return std::min(limit, longest + std::max<int64_t>(max_new_tokens, 1));
}

Result<std::optional<ProcessGroup>> MakeTensorParallelGroup(ProcessGroup& group, const ShardPlan& plan) {
  CHECK_EQ(group.world_size(), plan.world_size());
  if (plan.tp == 1) return std::optional<ProcessGroup>();
  const int own_stage = plan.ranks[static_cast<size_t>(group.rank())].stage;
  std::optional<ProcessGroup> own;
  // Split is a collective of the whole group: every rank makes every
  // stage's group, in stage order, and keeps its own.
  for (int stage = 0; stage < plan.pp; ++stage) {
    std::vector<int> members;
    for (int t = 0; t < plan.tp; ++t) members.push_back(plan.RankOf(stage, t));
    Result<ProcessGroup> split = group.Split(members);
    if (stage != own_stage) continue;
    if (!split)
      return split.error().Prefixed("making the tensor-parallel group of stage " + std::to_string(stage) +
                                    ": ");
    own = std::move(*split);
  }
  return own;
}

Result<GenerationReport> Generate(ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
                                  const std::vector<std::vector<int32_t>>& prompts,
                                  const GenerationOptions& options, GenerationObserver* observer,
                                  Timeline& timeline) {
  if (Status valid = ValidatePrompts(prompts, stage.config(), stage.context_length()); !valid) {
    return valid.error();
  }
  CHECK(plan.pp == 1 || stage.num_slots() >= static_cast<int>(prompts.size()))
      << "a pipelined stage needs a KV-cache slot per prompt";
  CHECK_EQ(group.world_size(), plan.world_size());
  CHECK(stage.part() == plan.ranks[static_cast<size_t>(group.rank())]) << "rank " << group.rank();
  CHECK_EQ(stage.tensor_parallel().has_value(), plan.tp > 1);
  CHECK_LT(stage.config().vocab_size, 1 << 24) << "ids must be exact in a float";
  PipelineRun run(group, plan, stage, prompts, options, observer, timeline);
  return run.Run();
}

}  // namespace inferno
