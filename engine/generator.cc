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

// The longest an idle pipeline waits for a sequence before it checks the
// ring with a tick (a quarter of the transport's timeout if that is less).
constexpr std::chrono::milliseconds kIdleTick{1000};

// A KV-cache slot and the sequence running in it.
struct Slot {
  bool busy = false;          // last stage: a sequence runs in it
  int64_t id = 0;             // last stage: SequenceSpec::id
  int64_t prompt_length = 0;  // last stage
  int64_t pos = 0;            // positions this stage has run
  int32_t previous = 0;       // last stage: the last token fed or sampled
  int64_t generated = 0;      // last stage: tokens sampled and kept
  int64_t max_new_tokens = 0;
  int32_t next = 0;                // one stage: the sampled token to run next
  bool greedy = false;             // last stage: temperature 0
  std::optional<Sampler> sampler;  // last stage
};

// One rank's part of one RunGenerator call.
class PipelineRun {
 public:
  PipelineRun(ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
              const GeneratorSettings& settings, SequenceSource* source, GenerationObserver* observer,
              Timeline& timeline)
      : group_(group),
        plan_(plan),
        stage_(stage),
        tensor_parallel_(stage.tensor_parallel()),
        ring_rows_(plan.TpClassifierRows(stage.part().tp_index)),
        settings_(settings),
        source_(source),
        observer_(observer),
        timeline_(timeline),
        dim_(stage.config().hidden_size),
        vocab_(stage.config().vocab_size),
        idle_tick_(std::min<std::chrono::milliseconds>(kIdleTick, group.transport()->timeout() / 4)),
        hidden_(stage.max_positions_per_call() * dim_),
        slots_(static_cast<size_t>(stage.num_slots())) {
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

  // Runs the stage's layers over positions x (n, dim) of the sequence in
  // `slot`.
  Status Forward(int slot, std::span<float> x) {
    Slot& s = slots_[slot];
    if (Status done = stage_.Forward(slot, s.pos, x, &timeline_, slot); !done) return done;
    s.pos += static_cast<int64_t>(x.size()) / dim_;
    return {};
  }

  // Embeds `tokens` (first stage) into the hidden buffer and runs the
  // stage's layers; returns the hidden states (n, dim).
  Result<std::span<float>> EmbedAndForward(int slot, std::span<const int32_t> tokens) {
    std::span<float> x = std::span<float>(hidden_).first(tokens.size() * dim_);
    if (Status embedded = stage_.Embed(tokens, x); !embedded) return embedded.error();
    if (Status done = Forward(slot, x); !done) return done.error();
    return x;
  }

  // Last stage: a free slot, or -1.
  int FreeSlot() const {
    for (size_t slot = 0; slot < slots_.size(); ++slot) {
      if (!slots_[slot].busy) return static_cast<int>(slot);
    }
    return -1;
  }

  // Last stage: starts the sequences the source has, while slots are free,
  // waiting until `deadline` at most for the first; with one stage,
  // prefills each and samples its first token.
  Status Admit(Clock::time_point deadline) {
    for (int slot = FreeSlot(); slot >= 0; slot = FreeSlot()) {
      std::optional<SequenceSpec> spec = source_->Next(deadline);
      if (!spec) return {};
      deadline = Clock::time_point::min();
      const std::vector<int32_t>& prompt = spec->prompt;
      if (Status valid = ValidatePrompts({prompt}, stage_.config(), stage_.context_length()); !valid) {
        return valid.error().Prefixed("sequence " + std::to_string(spec->id) + ": ");
      }
      Slot& s = slots_[slot];
      s.busy = true;
      s.id = spec->id;
      s.prompt_length = static_cast<int64_t>(prompt.size());
      s.pos = 0;
      s.previous = prompt.back();
      s.generated = 0;
      s.max_new_tokens = spec->max_new_tokens;
      s.greedy = spec->sampling.temperature == 0.0f;
      s.sampler.emplace(spec->sampling, static_cast<int32_t>(vocab_));
      ++running_;
      report_.prompt_tokens += s.prompt_length;
      if (plan_.pp > 1) {
        if (Status sent = Send("send admit", AdmitMessage{slot, static_cast<int32_t>(prompt.size())},
                               std::as_bytes(std::span(prompt)));
            !sent) {
          return sent;
        }
        continue;
      }
      Result<std::span<float>> x = std::span<float>();
      for (size_t begin = 0; begin < prompt.size(); begin += stage_.max_positions_per_call()) {
        const size_t n = std::min<size_t>(stage_.max_positions_per_call(), prompt.size() - begin);
        x = EmbedAndForward(slot, std::span<const int32_t>(prompt).subspan(begin, n));
        if (!x) return x.error();
      }
      if (Status sampled = ClassifyAlone(slot, x->last(dim_)); !sampled) return sampled;
    }
    return {};
  }

  // Leader: whether the sequence in `slot` samples another token.
  bool SamplesAnother(int slot) const { return slots_[slot].generated < slots_[slot].max_new_tokens; }

  // Last stage: the end of the sequence in `slot`, which frees it.
  void Stop(int slot, FinishReason reason) {
    Slot& s = slots_[slot];
    if (observer_ != nullptr) observer_->OnSequenceDone(s.id, reason);
    s.busy = false;
    s.sampler.reset();
    --running_;
  }

  // Last stage: the next token of the sequence in `slot` from the logits of
  // the ring's rows (classify_ after dim), which it may overwrite; reports
  // it, and returns it, or -1 when the sequence stops. Under tensor
  // parallelism every rank of the last stage calls it and gets the same
  // token: greedy without reported logits exchanges each rank's best
  // (value, id), otherwise every rank gathers the whole vector and samples
  // it with the same sampler. Precondition: SamplesAnother(slot).
  Result<int32_t> SampleNext(int slot) {
    Slot& s = slots_[slot];
    if (source_->Cancelled(s.id)) {
      Stop(slot, FinishReason::kCancelled);
      return -1;
    }
    const std::span<float> ring_logits = std::span<float>(classify_).subspan(dim_, ring_rows_.size());
    int32_t token;
    if (!tensor_parallel_) {
      TimedScope scope(timeline_, SpanKind::kCompute, "sample", slot);
      if (observer_ != nullptr && settings_.report_logits) observer_->OnLogits(s.id, ring_logits);
      token = s.sampler->Sample(ring_logits);
    } else if (s.greedy && !settings_.report_logits) {
      Result<int32_t> best = GroupArgMax(slot, ring_logits);
      if (!best) return best.error();
      token = *best;
    } else {
      if (Status gathered = GatherLogits(slot, ring_logits); !gathered) return gathered.error();
      TimedScope scope(timeline_, SpanKind::kCompute, "sample", slot);
      if (observer_ != nullptr && settings_.report_logits) observer_->OnLogits(s.id, logits_);
      token = s.sampler->Sample(logits_);
    }
    if (!first_token_) {
      first_token_ = Clock::now();
      report_.time_to_first_token_seconds = Seconds(start_, *first_token_);
    }
    if (std::find(settings_.stop_ids.begin(), settings_.stop_ids.end(), token) != settings_.stop_ids.end()) {
      Stop(slot, FinishReason::kStopToken);
      return -1;
    }
    ++s.generated;
    ++report_.generated_tokens;
    if (observer_ != nullptr) observer_->OnToken(s.id, s.previous, token);
    s.previous = token;
    const bool context_full = s.pos >= stage_.context_length();
    if (!SamplesAnother(slot) || context_full) {
      Stop(slot, FinishReason::kLength);
      return -1;
    }
    return token;
  }

  // The first id of the largest logit over the whole vocabulary, from each
  // tensor-parallel rank's best of `ring_logits`: the greedy token, as
  // Sampler picks it, without moving the logits.
  Result<int32_t> GroupArgMax(int slot, std::span<const float> ring_logits) {
    float best[2];
    {
      TimedScope scope(timeline_, SpanKind::kCompute, "sample", slot);
      const auto top = std::max_element(ring_logits.begin(), ring_logits.end());
      best[0] = *top;
      // Exact: ids are below 2^24 (checked in RunGenerator).
      best[1] = static_cast<float>(ring_rows_.begin + (top - ring_logits.begin()));
    }
    TimedScope scope(timeline_, SpanKind::kWait, "gather best", slot);
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
  Status GatherLogits(int slot, std::span<const float> ring_logits) {
    TimedScope scope(timeline_, SpanKind::kWait, "gather logits", slot);
    std::copy(ring_logits.begin(), ring_logits.end(), classify_padded_.begin());
    Result<std::vector<float>> all = tensor_parallel_->all_gather(classify_padded_);
    if (!all) return all.error().Prefixed("tensor-parallel all_gather of the logits: ");
    for (int t = 0; t < plan_.tp; ++t) {
      const RowRange rows = plan_.TpClassifierRows(t);
      std::copy_n(all->data() + t * gathered_width_, rows.size(), logits_.data() + rows.begin);
    }
    return {};
  }

  // One stage: the classifier over `hidden` (dim), the last position run of
  // the sequence in `slot`, and its next token, kept in the slot's `next`
  // unless the sequence stops. The classifier writes the logits straight
  // into classify_, which the sampler may overwrite: no per-token copy.
  Status ClassifyAlone(int slot, std::span<const float> hidden) {
    if (!SamplesAnother(slot)) {
      Stop(slot, FinishReason::kLength);
      return {};
    }
    const std::span<float> normed = std::span<float>(classify_).first(dim_);
    {
      TimedScope scope(timeline_, SpanKind::kCompute, "classifier", slot);
      stage_.FinalNorm(hidden, normed);
      stage_.ClassifierSlice(normed, std::span<float>(classify_).subspan(dim_, ring_rows_.size()));
    }
    const Result<int32_t> token = SampleNext(slot);
    if (!token) return token.error();
    slots_[slot].next = *token;
    return {};
  }

  // One stage: while the source has sequences or any runs, admits sequences
  // into free slots (between rounds), and runs one token of every running
  // sequence per round, in slot order.
  Status RunAlone() {
    while (true) {
      const Clock::time_point deadline = running_ == 0 ? Clock::now() + idle_tick_ : Clock::time_point::min();
      if (Status admitted = Admit(deadline); !admitted) return admitted;
      if (running_ == 0 && source_->Exhausted()) return {};
      for (size_t slot = 0; slot < slots_.size(); ++slot) {
        if (!slots_[slot].busy) continue;
        const int id = static_cast<int>(slot);
        Result<std::span<float>> x = EmbedAndForward(id, std::span<const int32_t>(&slots_[slot].next, 1));
        if (!x) return x.error();
        if (Status sampled = ClassifyAlone(id, x->last(dim_)); !sampled) return sampled;
      }
    }
  }

  // Sends `header` and `payload` to the ring successor as one message; the
  // transport copies both straight from here into its buffers.
  Status Send(const char* label, const MessageHeader& header, std::span<const std::byte> payload) {
    TimedScope scope(timeline_, SpanKind::kSend, label, SequenceOf(header));
    const int to = successor();
    const std::array<std::byte, kMessageHeaderBytes> header_bytes = EncodeMessageHeader(header);
    if (Status sent = group_.send_bytes(to, kMessageTag, header_bytes, payload); !sent) {
      return Failure(std::string(label) + ": send to", to, sent.error());
    }
    return {};
  }

  Status SendHidden(int slot, int64_t pos, std::span<const float> x) {
    return Send("send hidden",
                HiddenMessage{slot, static_cast<int32_t>(pos), static_cast<int32_t>(x.size() / dim_)},
                std::as_bytes(x));
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
    if (SequenceOf(header) >= static_cast<int>(slots_.size())) {
      return Malformed("kind " + std::to_string(static_cast<int32_t>(KindOf(header))) + ", sequence " +
                       std::to_string(SequenceOf(header)));
    }
    return Received{std::move(*bytes), std::move(*message)};
  }

  // Copies `message`'s payload into `out`, which it must fill exactly: the
  // one copy of a hop on the receiving side (the stage computes in place).
  template <typename T>
  Status TakePayload(const char* label, const PipelineMessage& message, std::span<T> out) {
    TimedScope scope(timeline_, SpanKind::kRecv, label, SequenceOf(message.header));
    const size_t values = message.payload.size() / sizeof(T);
    if (values != out.size()) {
      return Malformed(std::string(label) + " of " + std::to_string(values) + " values, expected " +
                       std::to_string(out.size()));
    }
    if (!out.empty()) std::memcpy(out.data(), message.payload.data(), out.size_bytes());
    return {};
  }

  // Every rank with W > 1: handles the messages from the ring predecessor, in
  // order, until the end message has gone round. The last stage admits
  // sequences between messages, and when none runs, waits for the source
  // and sends a tick or, once it is exhausted, the end.
  Status RunPipelined() {
    while (true) {
      if (stage_.is_last()) {
        const Clock::time_point deadline =
            running_ == 0 ? Clock::now() + idle_tick_ : Clock::time_point::min();
        if (Status admitted = Admit(deadline); !admitted) return admitted;
        if (running_ == 0) {
          const bool end = source_->Exhausted();
          const ControlMessage control{0, end ? ControlMessage::kEnd : ControlMessage::kTick};
          if (Status sent = Send(end ? "send end" : "send tick", control, {}); !sent) return sent;
        }
      }
      Result<Received> received = Receive();
      if (!received) return received.error();
      const PipelineMessage& message = received->message;
      Status handled =
          std::visit([&](const auto& header) { return Handle(header, message); }, message.header);
      if (!handled) return handled;
      if (ended_) return {};
    }
  }

  // Every rank: a tick or the end, passed on to the last stage.
  Status Handle(const ControlMessage& header, const PipelineMessage& message) {
    if (message.payload.size() != 0 ||
        (header.signal != ControlMessage::kTick && header.signal != ControlMessage::kEnd)) {
      return Malformed("control signal " + std::to_string(header.signal));
    }
    ended_ = header.signal == ControlMessage::kEnd;
    return stage_.is_last() ? Status{} : Send("send control", header, {});
  }

  // First stage: the prompt of a sequence starting in its slot: prefills it.
  Status Handle(const AdmitMessage& header, const PipelineMessage& message) {
    if (!stage_.is_first() || header.n < 1 || header.n > stage_.context_length()) {
      return Malformed("admit of sequence " + std::to_string(header.sequence) + " with " +
                       std::to_string(header.n) + " tokens");
    }
    prompt_.resize(static_cast<size_t>(header.n));
    if (Status taken = TakePayload("recv admit", message, std::span<int32_t>(prompt_)); !taken) return taken;
    for (int32_t id : prompt_) {
      if (id < 0 || id >= vocab_) return Malformed("admit of token " + std::to_string(id));
    }
    slots_[header.sequence].pos = 0;
    for (size_t begin = 0; begin < prompt_.size(); begin += stage_.max_positions_per_call()) {
      const size_t n = std::min<size_t>(stage_.max_positions_per_call(), prompt_.size() - begin);
      Result<std::span<float>> x =
          EmbedAndForward(header.sequence, std::span<const int32_t>(prompt_).subspan(begin, n));
      if (!x) return x.error();
      if (Status sent = SendHidden(header.sequence, static_cast<int64_t>(begin), *x); !sent) return sent;
    }
    return {};
  }

  // First stage: the next token of a sequence.
  Status Handle(const TokenMessage& header, const PipelineMessage& message) {
    if (!stage_.is_first() || header.token < 0 || header.token >= vocab_ || message.payload.size() != 0 ||
        slots_[header.sequence].pos >= stage_.context_length()) {
      return Malformed("token " + std::to_string(header.token) + " with " +
                       std::to_string(message.payload_floats()) + " floats");
    }
    const int64_t pos = slots_[header.sequence].pos;
    Result<std::span<float>> x = EmbedAndForward(header.sequence, std::span<const int32_t>(&header.token, 1));
    if (!x) return x.error();
    return SendHidden(header.sequence, pos, *x);
  }

  // Hidden states from the previous stage (position 0 starts the slot's
  // sequence anew); the last stage starts the classifier once a sequence's
  // prompt is in.
  Status Handle(const HiddenMessage& header, const PipelineMessage& message) {
    Slot& s = slots_[header.sequence];
    if (header.pos == 0) s.pos = 0;
    if (stage_.is_first() || header.pos != s.pos || header.n < 1 ||
        header.n > stage_.max_positions_per_call() || s.pos + header.n > stage_.context_length() ||
        (stage_.is_last() && !s.busy)) {
      return Malformed("hidden states of sequence " + std::to_string(header.sequence) + " at position " +
                       std::to_string(header.pos) + ", " + std::to_string(header.n) + " positions");
    }
    const std::span<float> x = std::span<float>(hidden_).first(header.n * dim_);
    if (Status taken = TakePayload("recv hidden", message, x); !taken) return taken;
    if (Status done = Forward(header.sequence, x); !done) return done;
    if (!stage_.is_last()) return SendHidden(header.sequence, header.pos, x);
    if (s.pos < s.prompt_length) return {};
    return StartClassifier(header.sequence, x.last(dim_));
  }

  // Last stage: sends the final-normed `hidden` (dim) of the sequence in
  // `slot` around the ring — or, when it samples no more, stops it.
  Status StartClassifier(int slot, std::span<const float> hidden) {
    if (!SamplesAnother(slot)) {
      Stop(slot, FinishReason::kLength);
      return {};
    }
    const std::span<float> normed = std::span<float>(classify_).first(dim_);
    {
      TimedScope scope(timeline_, SpanKind::kCompute, "final norm", slot);
      stage_.FinalNorm(hidden, normed);
    }
    return Send("send classify", ClassifyMessage{slot, 0}, std::as_bytes(std::span<const float>(normed)));
  }

  // Appends the logits of this rank's rows to a classify message; passes it
  // on, or on the last stage, where they complete the ring's rows, samples
  // and sends the token on. The last stage computes its rows only now, not
  // while the others compute theirs: its units of work stay short, so a
  // sequence whose logits are back waits less for it.
  Status Handle(const ClassifyMessage& header, const PipelineMessage& message) {
    // Rows relative to the ring's first.
    const RowRange rows{stage_.classifier_rows().begin - ring_rows_.begin,
                        stage_.classifier_rows().end - ring_rows_.begin};
    if (header.rows != rows.begin || (stage_.is_last() && !slots_[header.sequence].busy)) {
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
    if (!stage_.is_last()) {
      return Send("send classify", ClassifyMessage{header.sequence, static_cast<int32_t>(rows.end)},
                  std::as_bytes(std::span<const float>(classify)));
    }
    const Result<int32_t> token = SampleNext(header.sequence);
    if (!token) return token.error();
    if (*token < 0) return {};
    return Send("send token", TokenMessage{header.sequence, *token}, {});
  }

  ProcessGroup& group_;
  const ShardPlan& plan_;
  TransformerStage& stage_;
  std::optional<ProcessGroup> tensor_parallel_;  // the stage's group when tp > 1
  const RowRange ring_rows_;                     // the classifier rows of this rank's ring
  const GeneratorSettings& settings_;
  SequenceSource* source_;  // last stage
  GenerationObserver* observer_;
  Timeline& timeline_;
  const int64_t dim_;
  const int64_t vocab_;
  const std::chrono::milliseconds idle_tick_;
  std::vector<float> hidden_;  // (max_positions_per_call, dim)
  // (dim + ring_rows_.size()): the final-normed hidden state, then the
  // logits of the ring's rows (the sampler may overwrite them); with more
  // than one stage a classify message being extended.
  std::vector<float> classify_;
  int64_t gathered_width_ = 0;          // tp > 1: the longest ring's rows
  std::vector<float> classify_padded_;  // (gathered_width_) tp > 1: the ring's logits, padded
  std::vector<float> logits_;           // (vocab) tp > 1: the gathered logits
  std::vector<int32_t> prompt_;         // first stage: an admitted prompt
  std::vector<Slot> slots_;             // (num_slots)
  int64_t running_ = 0;                 // last stage: busy slots
  bool ended_ = false;                  // the end message has come
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

Result<GenerationReport> RunGenerator(ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
                                      const GeneratorSettings& settings, SequenceSource* source,
                                      GenerationObserver* observer, Timeline& timeline) {
  CHECK_EQ(group.world_size(), plan.world_size());
  CHECK(stage.part() == plan.ranks[static_cast<size_t>(group.rank())]) << "rank " << group.rank();
  CHECK_EQ(stage.tensor_parallel().has_value(), plan.tp > 1);
  CHECK_LT(stage.config().vocab_size, 1 << 24) << "ids must be exact in a float";
  CHECK(!stage.is_last() || source != nullptr) << "the last stage needs a sequence source";
  PipelineRun run(group, plan, stage, settings, source, observer, timeline);
  return run.Run();
}

namespace {

// Generate's prompts as a source: sequence i is prompt i.
class FixedPrompts : public SequenceSource {
 public:
  FixedPrompts(const std::vector<std::vector<int32_t>>& prompts, const GenerationOptions& options)
      : prompts_(prompts), options_(options) {}

  std::optional<SequenceSpec> Next(std::chrono::steady_clock::time_point) override {
    if (Exhausted()) return std::nullopt;
    const int64_t id = next_++;
    return SequenceSpec{id, prompts_[static_cast<size_t>(id)], options_.max_new_tokens, options_.sampling};
  }
  bool Exhausted() override { return next_ == static_cast<int64_t>(prompts_.size()); }
  bool Cancelled(int64_t) override { return false; }

 private:
  const std::vector<std::vector<int32_t>>& prompts_;
  const GenerationOptions& options_;
  int64_t next_ = 0;
};

// Keeps every sequence's tokens for the report and passes everything on.
class KeepTokens : public GenerationObserver {
 public:
  KeepTokens(size_t sequences, GenerationObserver* next) : generated_(sequences), next_(next) {}

  void OnLogits(int64_t id, std::span<const float> logits) override {
    if (next_ != nullptr) next_->OnLogits(id, logits);
  }
  void OnToken(int64_t id, int32_t previous, int32_t token) override {
    generated_[static_cast<size_t>(id)].push_back(token);
    if (next_ != nullptr) next_->OnToken(id, previous, token);
  }
  void OnSequenceDone(int64_t id, FinishReason reason) override {
    if (next_ != nullptr) next_->OnSequenceDone(id, reason);
  }

  std::vector<std::vector<int32_t>> generated_;

 private:
  GenerationObserver* next_;
};

}  // namespace

Result<GenerationReport> Generate(ProcessGroup& group, const ShardPlan& plan, TransformerStage& stage,
                                  const std::vector<std::vector<int32_t>>& prompts,
                                  const GenerationOptions& options, GenerationObserver* observer,
                                  Timeline& timeline) {
  if (Status valid = ValidatePrompts(prompts, stage.config(), stage.context_length()); !valid) {
    return valid.error();
  }
  FixedPrompts source(prompts, options);
  KeepTokens kept(prompts.size(), observer);
  Result<GenerationReport> report = RunGenerator(group, plan, stage, options, &source, &kept, timeline);
  if (report && group.is_leader()) report->generated = std::move(kept.generated_);
  return report;
}

}  // namespace inferno
