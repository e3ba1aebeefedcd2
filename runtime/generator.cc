#include "runtime/generator.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <variant>

#include <glog/logging.h>

#include "runtime/pipeline_protocol.h"
#include "runtime/step_decisions.h"

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
  bool cancelled = false;          // last stage: stops before its next token is sampled
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
        max_group_(std::min<int64_t>(stage.max_positions_per_call(), stage.num_slots())),
        hidden_(stage.max_positions_per_call() * dim_),
        slots_(static_cast<size_t>(stage.num_slots())) {
    classify_.resize(max_group_ * (dim_ + ring_rows_.size()));
    normed_.resize(max_group_ * dim_);
    own_logits_.resize(max_group_ * stage.classifier_rows().size());
    if (tensor_parallel_) {
      // Every ring's rows, padded to the longest (index 0's), for all_gather.
      gathered_width_ = plan_.TpClassifierRows(0).size();
      classify_padded_.resize(gathered_width_);
      logits_.resize(vocab_);
    }
  }

  Result<GenerationReport> Run() {
    start_ = Clock::now();
    next_report_ = start_ + idle_tick_;
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
  // A received message, decoded into the messages of its step (one, or a
  // group's members, all of one kind): their payloads view `bytes`, the
  // transport's buffer, which lives as long as this does.
  struct Received {
    Payload bytes;
    std::vector<PipelineMessage> step;
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

  // The timeline's label of a step over `slots` sequences, the first of
  // which is `first`: the sequence, or -1 for a group.
  static int Label(size_t slots, int first) { return slots == 1 ? first : -1; }

  // Runs the stage's layers over x (rows, dim), the positions of `batch`,
  // and advances each part's slot past them.
  Status Forward(std::span<const SlotPositions> batch, std::span<float> x) {
    if (Status done = stage_.Forward(batch, x, &timeline_, Label(batch.size(), batch[0].slot)); !done) {
      return done;
    }
    for (const SlotPositions& part : batch) slots_[part.slot].pos += part.n;
    return {};
  }

  // First stage: embeds the tokens of `batch_` (one position of each part,
  // tokens_[i] for part i; or one part and its tokens) into the hidden
  // buffer and runs the stage's layers; returns the hidden states (rows,
  // dim).
  Result<std::span<float>> EmbedAndForward() {
    std::span<float> x = std::span<float>(hidden_).first(tokens_.size() * dim_);
    if (Status embedded = stage_.Embed(tokens_, x); !embedded) return embedded.error();
    if (Status done = Forward(batch_, x); !done) return done.error();
    return x;
  }

  // First stage: prefills `prompt` in the slot, in calls of at most
  // max_positions_per_call positions; calls `chunk_done(begin, x)` with
  // each chunk's first position and hidden states (n, dim).
  template <typename ChunkDone>
  Status Prefill(int slot, std::span<const int32_t> prompt, ChunkDone chunk_done) {
    slots_[slot].pos = 0;
    for (size_t begin = 0; begin < prompt.size(); begin += stage_.max_positions_per_call()) {
      const size_t n = std::min<size_t>(stage_.max_positions_per_call(), prompt.size() - begin);
      tokens_.assign(prompt.begin() + begin, prompt.begin() + begin + n);
      batch_.assign(1, SlotPositions{slot, static_cast<int64_t>(begin), static_cast<int64_t>(n)});
      Result<std::span<float>> x = EmbedAndForward();
      if (!x) return x.error();
      if (Status done = chunk_done(static_cast<int64_t>(begin), *x); !done) return done;
    }
    return {};
  }

  // Last stage: a free slot, or -1.
  int FreeSlot() const {
    for (size_t slot = 0; slot < slots_.size(); ++slot) {
      if (!slots_[slot].busy) return static_cast<int>(slot);
    }
    return -1;
  }

  // Last stage: this step's decisions. The leader asks the source: the
  // sequences for the free slots, waiting until `deadline` at most for the
  // first; the running ones cancelled; whether more will come; and whether
  // a tick is due. Under tensor parallelism it sends them to the stage's
  // other ranks, which return them.
  Result<StepDecisions> Decide(Clock::time_point deadline) {
    StepDecisions decisions;
    if (group_.is_leader()) {
      const auto free = std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; });
      for (int64_t i = 0; i < free; ++i) {
        std::optional<SequenceSpec> spec = source_->Next(i == 0 ? deadline : Clock::time_point::min());
        if (!spec) break;
        decisions.admitted.push_back(std::move(*spec));
      }
      for (const Slot& s : slots_) {
        if (s.busy && source_->Cancelled(s.id)) decisions.cancelled.push_back(s.id);
      }
      decisions.exhausted = source_->Exhausted();
      decisions.tick_due = Clock::now() >= next_report_;
    }
    if (!tensor_parallel_) return decisions;
    TimedScope scope(timeline_, SpanKind::kWait, "agree on the step", -1);
    std::vector<std::vector<std::byte>> copies;
    if (group_.is_leader()) copies.assign(static_cast<size_t>(plan_.tp), EncodeStepDecisions(decisions));
    Result<std::vector<std::byte>> bytes = tensor_parallel_->scatter(0, copies);
    if (!bytes) return bytes.error().Prefixed("tensor-parallel scatter of the step's decisions: ");
    if (group_.is_leader()) return decisions;
    // The leader is rank 0, the tensor-parallel group's first.
    Result<StepDecisions> decoded = DecodeStepDecisions(*bytes);
    if (!decoded) return decoded.error().Prefixed("from rank 0: ");
    return decoded;
  }

  // Last stage: takes this step's decisions (see Decide): marks the
  // cancelled sequences and starts the admitted ones in free slots; with one
  // stage, prefills each and samples its first token. Returns them.
  Result<StepDecisions> Admit(Clock::time_point deadline) {
    Result<StepDecisions> decisions = Decide(deadline);
    if (!decisions) return decisions.error();
    for (int64_t id : decisions->cancelled) {
      for (Slot& s : slots_) {
        if (s.busy && s.id == id) s.cancelled = true;
      }
    }
    for (const SequenceSpec& spec : decisions->admitted) {
      const int slot = FreeSlot();
      if (slot < 0) {
        return Error::Corruption("step decisions from rank 0: " + std::to_string(decisions->admitted.size()) +
                                 " sequences admitted, more than the free slots");
      }
      const std::vector<int32_t>& prompt = spec.prompt;
      if (Status valid = ValidatePrompts({prompt}, stage_.config(), stage_.context_length()); !valid) {
        return valid.error().Prefixed("sequence " + std::to_string(spec.id) + ": ");
      }
      Slot& s = slots_[slot];
      s.busy = true;
      s.id = spec.id;
      s.prompt_length = static_cast<int64_t>(prompt.size());
      s.pos = 0;
      s.previous = prompt.back();
      s.generated = 0;
      s.max_new_tokens = spec.max_new_tokens;
      s.greedy = spec.sampling.temperature == 0.0f;
      s.cancelled = false;
      s.sampler.emplace(spec.sampling, static_cast<int32_t>(vocab_));
      ++running_;
      report_.prompt_tokens += s.prompt_length;
      if (plan_.pp > 1) {
        if (Status sent = Send("send admit", AdmitMessage{slot, static_cast<int32_t>(prompt.size())},
                               std::as_bytes(std::span(prompt)));
            !sent) {
          return sent.error();
        }
        ++groups_on_the_way_;
        continue;
      }
      std::span<const float> last;
      Status prefilled = Prefill(slot, prompt, [&](int64_t, std::span<const float> x) {
        last = x.last(dim_);
        return Status();
      });
      if (!prefilled) return prefilled.error();
      const int slots[] = {slot};
      if (Status sampled = ClassifyAlone(slots, last); !sampled) return sampled.error();
    }
    return decisions;
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

  // Last stage: stops the sequences of `slots` that sample no more, and
  // writes the final-normed last hidden state of each other one — rows of
  // `hidden` (slots.size(), dim), in order — as the next row of `normed`
  // (dim floats each); returns those sequences' slots in classified_.
  void NormForClassifier(std::span<const int> slots, std::span<const float> hidden, std::span<float> normed) {
    TimedScope scope(timeline_, SpanKind::kCompute, "final norm", Label(slots.size(), slots[0]));
    classified_.clear();
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!SamplesAnother(slots[i])) {
        Stop(slots[i], FinishReason::kLength);
        continue;
      }
      stage_.FinalNorm(hidden.subspan(i * dim_, dim_), normed.subspan(classified_.size() * dim_, dim_));
      classified_.push_back(slots[i]);
    }
  }

  // Last stage: the next token of the sequence in `slot` from the logits of
  // the ring's rows, `ring_logits` (ring_rows_.size()), which it may
  // overwrite; reports it, and returns it, or -1 when the sequence stops.
  // Under tensor parallelism every rank of the last stage calls it and gets
  // the same token: greedy without reported logits exchanges each rank's
  // best (value, id), otherwise every rank gathers the whole vector and
  // samples it with the same sampler. Precondition: SamplesAnother(slot).
  Result<int32_t> SampleNext(int slot, std::span<float> ring_logits) {
    Slot& s = slots_[slot];
    if (s.cancelled) {
      Stop(slot, FinishReason::kCancelled);
      return -1;
    }
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

  // own_logits_ (n, this rank's classifier rows) = the logits of this
  // rank's rows for the final-normed hidden states normed_ (n, dim), in one
  // pass over the rows.
  std::span<float> ClassifyOwnRows(int64_t n, int label) {
    TimedScope scope(timeline_, SpanKind::kCompute, "classifier", label);
    const std::span<float> logits = std::span<float>(own_logits_).first(n * stage_.classifier_rows().size());
    stage_.ClassifierSlice(std::span<const float>(normed_).first(n * dim_), logits);
    return logits;
  }

  // One stage: the classifier over `hidden` (slots.size(), dim), the last
  // position run of each sequence of `slots`, in one pass, and their next
  // tokens, kept in each slot's `next` unless the sequence stops.
  Status ClassifyAlone(std::span<const int> slots, std::span<const float> hidden) {
    NormForClassifier(slots, hidden, normed_);
    if (classified_.empty()) return {};
    ++report_.sampling_steps;
    const std::span<float> logits =
        ClassifyOwnRows(static_cast<int64_t>(classified_.size()), Label(classified_.size(), classified_[0]));
    const int64_t rows = ring_rows_.size();
    for (size_t i = 0; i < classified_.size(); ++i) {
      const Result<int32_t> token = SampleNext(classified_[i], logits.subspan(i * rows, rows));
      if (!token) return token.error();
      slots_[classified_[i]].next = *token;
    }
    return {};
  }

  // One stage: while the source has sequences or any runs, admits sequences
  // into free slots (between rounds), and runs one token of every running
  // sequence per round, as batches of up to max_group_ sequences in slot
  // order.
  Status RunAlone() {
    while (true) {
      const Clock::time_point deadline = running_ == 0 ? Clock::now() + idle_tick_ : Clock::time_point::min();
      Result<StepDecisions> decisions = Admit(deadline);
      if (!decisions) return decisions.error();
      if (decisions->tick_due) {
        Result<std::vector<double>> times = StageTimes();
        if (!times) return times.error();
        ReportRankTimes(*times);
        next_report_ = Clock::now() + idle_tick_;
      }
      if (running_ == 0 && decisions->exhausted) return {};
      std::vector<int> round;
      for (size_t slot = 0; slot < slots_.size(); ++slot) {
        if (slots_[slot].busy) round.push_back(static_cast<int>(slot));
      }
      for (size_t begin = 0; begin < round.size(); begin += max_group_) {
        const std::span<const int> group =
            std::span<const int>(round).subspan(begin, std::min<size_t>(max_group_, round.size() - begin));
        tokens_.clear();
        batch_.clear();
        for (int slot : group) {
          tokens_.push_back(slots_[slot].next);
          batch_.push_back(SlotPositions{slot, slots_[slot].pos, 1});
        }
        Result<std::span<float>> x = EmbedAndForward();
        if (!x) return x.error();
        if (Status sampled = ClassifyAlone(group, *x); !sampled) return sampled;
      }
    }
  }

  // Sends `header` and `payload` to the ring successor as one message; the
  // transport copies both straight from here into its buffers.
  Status Send(const char* label, const MessageHeader& header, std::span<const std::byte> payload) {
    return SendBytes(label, EncodeMessageHeader(header), payload, SequenceOf(header));
  }

  // Sends the messages of one step to the ring successor: `headers` (all of
  // one kind) with their payloads, (headers.size(), one message's payload)
  // in `payload`; a group when there are several.
  Status SendStep(const char* label, std::span<const MessageHeader> headers,
                  std::span<const std::byte> payload) {
    if (headers.size() == 1) return Send(label, headers[0], payload);
    return SendBytes(label, EncodeGroupHeader(headers), payload, -1);
  }

  Status SendBytes(const char* label, std::span<const std::byte> head, std::span<const std::byte> payload,
                   int sequence) {
    TimedScope scope(timeline_, SpanKind::kSend, label, sequence);
    const int to = successor();
    if (Status sent = group_.send_bytes(to, kMessageTag, head, payload); !sent) {
      return Failure(std::string(label) + ": send to", to, sent.error());
    }
    return {};
  }

  // Waits for the next message from the ring predecessor; decodes the
  // headers of its step and checks their sequences. The payload is not
  // copied.
  Result<Received> Receive() {
    const int from = predecessor();
    TimedScope scope(timeline_, SpanKind::kWait, "wait", -1);
    Result<Payload> bytes = group_.recv_payload(from, kMessageTag);
    if (!bytes) return Failure("receive from", from, bytes.error());
    Result<std::vector<PipelineMessage>> step = DecodePipelineMessages(bytes->bytes());
    if (!step) return Malformed(step.error().message);
    for (const PipelineMessage& message : *step) {
      const MessageHeader& header = message.header;
      if (SequenceOf(header) >= static_cast<int>(slots_.size())) {
        return Malformed("kind " + std::to_string(static_cast<int32_t>(KindOf(header))) + ", sequence " +
                         std::to_string(SequenceOf(header)));
      }
    }
    if (step->size() > static_cast<size_t>(max_group_)) {
      return Malformed("a group of " + std::to_string(step->size()) + " sequences, more than " +
                       std::to_string(max_group_));
    }
    return Received{std::move(*bytes), std::move(*step)};
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

  // Malformed unless the sequences of `step` are distinct.
  Status CheckDistinct(const std::vector<PipelineMessage>& step) {
    for (size_t i = 0; i < step.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (SequenceOf(step[i].header) == SequenceOf(step[j].header)) {
          return Malformed("a group naming sequence " + std::to_string(SequenceOf(step[i].header)) +
                           " twice");
        }
      }
    }
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
        Result<StepDecisions> decisions = Admit(deadline);
        if (!decisions) return decisions.error();
        if (!tick_on_the_way_ && (running_ == 0 || decisions->tick_due)) {
          const bool end = running_ == 0 && decisions->exhausted;
          const ControlMessage control{0, end ? ControlMessage::kEnd : ControlMessage::kTick};
          if (Status sent = Send(end ? "send end" : "send tick", control, {}); !sent) return sent;
          tick_on_the_way_ = true;
          next_report_ = Clock::now() + idle_tick_;
        }
      }
      Result<Received> received = Receive();
      if (!received) return received.error();
      const std::vector<PipelineMessage>& step = received->step;
      if (Status distinct = CheckDistinct(step); !distinct) return distinct;
      Status handled;
      switch (KindOf(step[0].header)) {
        case MessageKind::kHidden:
          handled = HandleHidden(step);
          break;
        case MessageKind::kToken:
          handled = HandleTokens(step);
          break;
        case MessageKind::kClassify:
          handled = HandleClassify(step);
          break;
        case MessageKind::kAdmit:
          handled = Handle(std::get<AdmitMessage>(step[0].header), step[0]);
          break;
        case MessageKind::kControl:
          handled = Handle(std::get<ControlMessage>(step[0].header), step[0]);
          break;
        case MessageKind::kGroup:
          LOG(FATAL) << "a group is decoded into its members";
      }
      if (!handled) return handled;
      if (ended_) return {};
    }
  }

  // Every rank: the end, passed on to the last stage; or a tick, to which
  // each stage but the last appends its time, and whose times the last
  // stage reports.
  Status Handle(const ControlMessage& header, const PipelineMessage& message) {
    if (header.signal == ControlMessage::kEnd && message.payload.size() == 0) {
      ended_ = true;
      return stage_.is_last() ? Status{} : Send("send end", header, {});
    }
    if (header.signal != ControlMessage::kTick) {
      return Malformed("control signal " + std::to_string(header.signal) + " with " +
                       std::to_string(message.payload.size()) + " bytes");
    }
    // Ring 0: (stages before this one, tp, kTickValuesPerRank); other rings: empty.
    const bool carries_times = stage_.part().tp_index == 0;
    tick_times_.resize(
        carries_times ? static_cast<size_t>(stage_.part().stage * plan_.tp) * kTickValuesPerRank : 0);
    Status taken = TakePayload("recv tick", message, std::span<double>(tick_times_));
    if (!taken) return taken;
    // Every rank of the stage has its ring's tick at this step (the leader's
    // decisions send them at the same step, and the rings' messages come in
    // the same order), so they gather their times here.
    Result<std::vector<double>> own = StageTimes();
    if (!own) return own.error();
    tick_times_.insert(tick_times_.end(), own->begin(), own->end());
    if (stage_.is_last()) {
      tick_on_the_way_ = false;
      ReportRankTimes(tick_times_);
      return {};
    }
    return Send("send tick", header, std::as_bytes(std::span<const double>(tick_times_)));
  }

  // This stage's ranks' compute and wait seconds, (tp, kTickValuesPerRank)
  // in tensor-parallel order, on the stage's tensor-parallel index 0; none
  // on its other ranks. A collective of the stage's group when tp > 1.
  Result<std::vector<double>> StageTimes() {
    const std::array<double, kTickValuesPerRank> own = {timeline_.seconds(SpanKind::kCompute),
                                                        timeline_.seconds(SpanKind::kWait)};
    if (!tensor_parallel_) return std::vector<double>(own.begin(), own.end());
    Result<std::vector<std::vector<std::byte>>> gathered =
        tensor_parallel_->gather(0, std::as_bytes(std::span<const double>(own)));
    if (!gathered) return gathered.error().Prefixed("tensor-parallel gather of the ranks' times: ");
    std::vector<double> times;
    for (size_t t = 0; t < gathered->size(); ++t) {
      const std::vector<std::byte>& bytes = (*gathered)[t];
      if (bytes.size() != sizeof own) {
        return Error::Corruption("the times of tensor-parallel rank " + std::to_string(t) + ": " +
                                 std::to_string(bytes.size()) + " bytes, expected " +
                                 std::to_string(sizeof own));
      }
      const size_t at = times.size();
      times.resize(at + kTickValuesPerRank);
      std::memcpy(times.data() + at, bytes.data(), bytes.size());
    }
    return times;
  }

  // Leader: reports every rank's time to the settings' report_rank_times,
  // if set. `times` (pp, tp, kTickValuesPerRank): the compute and wait
  // seconds of each rank, stage by stage, first first.
  void ReportRankTimes(std::span<const double> times) {
    if (!group_.is_leader() || !settings_.report_rank_times) return;
    std::vector<RankTimes> ranks;
    for (int stage = 0; stage < plan_.pp; ++stage) {
      for (int t = 0; t < plan_.tp; ++t) {
        const size_t at = static_cast<size_t>(stage * plan_.tp + t) * kTickValuesPerRank;
        ranks.push_back(RankTimes{plan_.RankOf(stage, t), times[at], times[at + 1]});
      }
    }
    settings_.report_rank_times(ranks);
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
    return Prefill(header.sequence, prompt_, [&](int64_t begin, std::span<const float> x) {
      return Send(
          "send hidden",
          HiddenMessage{header.sequence, static_cast<int32_t>(begin), static_cast<int32_t>(x.size() / dim_)},
          std::as_bytes(x));
    });
  }

  // First stage: the next token of each sequence of the step: one batched
  // forward; their hidden states go on as one step.
  Status HandleTokens(const std::vector<PipelineMessage>& step) {
    tokens_.clear();
    batch_.clear();
    for (const PipelineMessage& message : step) {
      const TokenMessage& header = std::get<TokenMessage>(message.header);
      if (!stage_.is_first() || header.token < 0 || header.token >= vocab_ || message.payload.size() != 0 ||
          slots_[header.sequence].pos >= stage_.context_length()) {
        return Malformed("token " + std::to_string(header.token) + " with " +
                         std::to_string(message.payload_floats()) + " floats");
      }
      tokens_.push_back(header.token);
      batch_.push_back(SlotPositions{header.sequence, slots_[header.sequence].pos, 1});
    }
    Result<std::span<float>> x = EmbedAndForward();
    if (!x) return x.error();
    headers_.clear();
    for (const SlotPositions& part : batch_) {
      headers_.push_back(HiddenMessage{part.slot, static_cast<int32_t>(part.pos), 1});
    }
    return SendStep("send hidden", headers_, std::as_bytes(*x));
  }

  // Hidden states from the previous stage (position 0 starts the slot's
  // sequence anew), of one or several sequences: one batched forward. The
  // last stage starts the classifier for the sequences whose prompt is in.
  Status HandleHidden(const std::vector<PipelineMessage>& step) {
    batch_.clear();
    int64_t rows = 0;
    for (const PipelineMessage& message : step) {
      const HiddenMessage& header = std::get<HiddenMessage>(message.header);
      Slot& s = slots_[header.sequence];
      if (header.pos == 0) s.pos = 0;
      if (stage_.is_first() || header.pos != s.pos || header.n < 1 ||
          header.n > stage_.max_positions_per_call() - rows || s.pos + header.n > stage_.context_length() ||
          (stage_.is_last() && !s.busy)) {
        return Malformed("hidden states of sequence " + std::to_string(header.sequence) + " at position " +
                         std::to_string(header.pos) + ", " + std::to_string(header.n) + " positions");
      }
      const std::span<float> x = std::span<float>(hidden_).subspan(rows * dim_, header.n * dim_);
      if (Status taken = TakePayload("recv hidden", message, x); !taken) return taken;
      batch_.push_back(SlotPositions{header.sequence, header.pos, header.n});
      rows += header.n;
    }
    const std::span<float> x = std::span<float>(hidden_).first(rows * dim_);
    if (Status done = Forward(batch_, x); !done) return done;
    if (!stage_.is_last()) {
      headers_.clear();
      for (const PipelineMessage& message : step) headers_.push_back(message.header);
      return SendStep("send hidden", headers_, std::as_bytes(x));
    }
    // The last position of each sequence whose prompt is in, and its slot.
    std::vector<int>& at_classifier = step_slots_;
    at_classifier.clear();
    int64_t row = 0;
    for (const SlotPositions& part : batch_) {
      row += part.n;
      const Slot& s = slots_[part.slot];
      if (s.pos < s.prompt_length) continue;
      if (row - 1 != static_cast<int64_t>(at_classifier.size())) {
        std::copy_n(x.data() + (row - 1) * dim_, dim_, x.data() + at_classifier.size() * dim_);
      }
      at_classifier.push_back(part.slot);
    }
    if (at_classifier.empty()) return {};  // a prompt chunk before the last
    // This step's group reached the classifier: it goes on as a classify
    // step, or ends here when none of its sequences samples another.
    NormForClassifier(at_classifier, x.first(at_classifier.size() * dim_), classify_);
    if (classified_.empty()) {
      --groups_on_the_way_;
      return FlushReady();
    }
    headers_.clear();
    for (int slot : classified_) headers_.push_back(ClassifyMessage{slot, 0});
    return SendStep("send classify", headers_,
                    std::as_bytes(std::span<const float>(classify_).first(classified_.size() * dim_)));
  }

  // Appends the logits of this rank's rows to each message of a classify
  // step, in one pass over the rows; passes them on as one step, or on the
  // last stage, where they complete the ring's rows, samples each sequence's
  // next token. The last stage computes its rows only now, not while the
  // others compute theirs: its units of work stay short, so a group whose
  // logits are back waits less for it.
  Status HandleClassify(const std::vector<PipelineMessage>& step) {
    // Rows relative to the ring's first.
    const RowRange rows{stage_.classifier_rows().begin - ring_rows_.begin,
                        stage_.classifier_rows().end - ring_rows_.begin};
    // classify_ (n, stride): each message's payload, then this rank's logits.
    const int64_t stride = dim_ + rows.end;
    const int64_t n = static_cast<int64_t>(step.size());
    for (int64_t i = 0; i < n; ++i) {
      const ClassifyMessage& header = std::get<ClassifyMessage>(step[i].header);
      if (header.rows != rows.begin || (stage_.is_last() && !slots_[header.sequence].busy)) {
        return Malformed("logits of " + std::to_string(header.rows) + " rows, expected " +
                         std::to_string(rows.begin));
      }
      const std::span<float> row = std::span<float>(classify_).subspan(i * stride, stride);
      if (Status taken = TakePayload("recv classify", step[i], row.first(dim_ + rows.begin)); !taken) {
        return taken;
      }
      std::copy_n(row.data(), dim_, normed_.data() + i * dim_);
    }
    const int label = Label(step.size(), SequenceOf(step[0].header));
    const std::span<const float> own = ClassifyOwnRows(n, label);
    for (int64_t i = 0; i < n; ++i) {
      std::copy_n(own.data() + i * rows.size(), rows.size(),
                  classify_.data() + i * stride + dim_ + rows.begin);
    }
    if (!stage_.is_last()) {
      headers_.clear();
      for (const PipelineMessage& message : step) {
        headers_.push_back(ClassifyMessage{SequenceOf(message.header), static_cast<int32_t>(rows.end)});
      }
      return SendStep("send classify", headers_,
                      std::as_bytes(std::span<const float>(classify_).first(n * stride)));
    }
    ++report_.sampling_steps;
    --groups_on_the_way_;
    for (int64_t i = 0; i < n; ++i) {
      const int slot = SequenceOf(step[i].header);
      const Result<int32_t> token =
          SampleNext(slot, std::span<float>(classify_).subspan(i * stride + dim_, ring_rows_.size()));
      if (!token) return token.error();
      if (*token >= 0) ready_.push_back(TokenMessage{slot, *token});
    }
    return FlushReady();
  }

  // Last stage, W > 1: sends the sampled tokens of ready_ to the first stage
  // in groups. The running sequences travel as up to W groups of about equal
  // size (at most max_group_), so that every stage has a group to work on
  // while the others work on theirs, and each works on a group with one pass
  // over its weights: groups of the target size go at once; a smaller rest
  // waits for the next group to come back (and joins it) while W groups are
  // on their way, else goes as it is.
  Status FlushReady() {
    if (ready_.empty()) return {};
    const size_t target =
        static_cast<size_t>(std::min<int64_t>(max_group_, (running_ + plan_.pp - 1) / plan_.pp));
    size_t begin = 0;
    while (ready_.size() - begin >= target || (begin < ready_.size() && groups_on_the_way_ < plan_.pp)) {
      const size_t size = std::min(target, ready_.size() - begin);
      headers_.assign(ready_.begin() + begin, ready_.begin() + begin + size);
      if (Status sent = SendStep("send token", headers_, {}); !sent) return sent;
      ++groups_on_the_way_;
      begin += size;
    }
    ready_.erase(ready_.begin(), ready_.begin() + begin);
    return {};
  }

  ProcessGroup& group_;
  const ShardPlan& plan_;
  TransformerStage& stage_;
  std::optional<ProcessGroup> tensor_parallel_;  // the stage's group when tp > 1
  const RowRange ring_rows_;                     // the classifier rows of this rank's ring
  const GeneratorSettings& settings_;
  SequenceSource* source_;  // leader
  GenerationObserver* observer_;
  Timeline& timeline_;
  const int64_t dim_;
  const int64_t vocab_;
  const std::chrono::milliseconds idle_tick_;
  // The most sequences in one step: a batched forward's positions, at most
  // one per slot.
  const int64_t max_group_;
  std::vector<float> hidden_;  // (max_positions_per_call, dim)
  // (max_group_, dim + ring_rows_.size()): per sequence of a classify step,
  // the final-normed hidden state, then the logits of the ring's rows so far
  // (the sampler may overwrite them).
  std::vector<float> classify_;
  std::vector<float> normed_;           // (max_group_, dim) the classifier's input
  std::vector<float> own_logits_;       // (max_group_, this rank's classifier rows)
  int64_t gathered_width_ = 0;          // tp > 1: the longest ring's rows
  std::vector<float> classify_padded_;  // (gathered_width_) tp > 1: the ring's logits, padded
  std::vector<float> logits_;           // (vocab) tp > 1: the gathered logits
  std::vector<int32_t> prompt_;         // first stage: an admitted prompt
  std::vector<int32_t> tokens_;         // first stage: the tokens of a forward (embedded)
  std::vector<SlotPositions> batch_;    // the positions of a forward
  std::vector<MessageHeader> headers_;  // the messages of a step being sent
  std::vector<int> step_slots_;         // last stage: the sequences of a step at the classifier
  std::vector<int> classified_;         // last stage: of those, the ones that sample another
  std::vector<Slot> slots_;             // (num_slots)
  int64_t running_ = 0;                 // last stage: busy slots
  // Last stage, W > 1: the steps on their way round the ring that will come
  // back to the last stage (each admit and each token group, until its
  // classify step is back or it ends), and the sampled tokens not sent yet.
  int64_t groups_on_the_way_ = 0;
  std::vector<TokenMessage> ready_;
  bool ended_ = false;  // the end message has come
  // Last stage: when it next reports the ranks' times (one stage) or sends a
  // tick, which carries them, while sequences run; whether a tick is on its
  // way round the ring.
  Clock::time_point next_report_;
  bool tick_on_the_way_ = false;
  std::vector<double> tick_times_;  // a tick's payload: (stages, tp, kTickValuesPerRank) on ring 0
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
  CHECK(!group.is_leader() || source != nullptr) << "the leader needs a sequence source";
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
