#include "engine/generator.h"

#include <algorithm>
#include <string>

#include <glog/logging.h>

#include "engine/tokenizer.h"

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
  PipelineRun(ProcessGroup& group, TransformerStage& stage, const std::vector<std::vector<int32_t>>& prompts,
              const GenerationOptions& options, GenerationObserver* observer, Timeline& timeline)
      : group_(group),
        stage_(stage),
        options_(options),
        observer_(observer),
        timeline_(timeline),
        dim_(stage.config().hidden_size),
        hidden_(stage.max_positions_per_call() * dim_),
        logits_scratch_(stage.config().vocab_size) {
    for (const std::vector<int32_t>& prompt : prompts) {
      sequences_.push_back({&prompt, 0, prompt.back(), 0,
                            Sampler(options.sampling, static_cast<int32_t>(stage.config().vocab_size))});
    }
    report_.generated.resize(prompts.size());
  }

  EngineResult<GenerationReport> Run() {
    start_ = Clock::now();
    const int world = group_.world_size();
    EngineStatus status;
    if (world == 1) {
      status = RunAlone();
    } else if (stage_.is_first()) {
      status = RunFirstStage();
    } else if (stage_.is_last()) {
      status = RunLastStage();
    } else {
      status = RunMiddleStage();
    }
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
      EngineResult<Timeline> decoded = Timeline::Deserialize(bytes);
      if (!decoded) return decoded.error();
      report_.timelines.push_back(std::move(*decoded));
    }
    return std::move(report_);
  }

 private:
  struct Header {
    int sequence = 0;
    int64_t pos = 0;
    int64_t n = 0;
  };

  int slot(int sequence) const { return stage_.num_slots() == 1 ? 0 : sequence; }
  int first_stage_rank() const { return group_.world_size() - 1; }

  EngineError Failure(const std::string& op, int peer, const CollectiveError& error) const {
    return EngineError{"rank " + std::to_string(group_.rank()) + ": " + op + " rank " + std::to_string(peer) + ": " +
                       error.ToString()};
  }

  // Embeds `tokens` (first stage) into the hidden buffer and runs the
  // stage's layers; returns the hidden states (n, dim).
  std::span<float> EmbedAndForward(int sequence, std::span<const int32_t> tokens) {
    TimedScope scope(timeline_, SpanKind::kCompute, "forward", sequence);
    std::span<float> x = std::span<float>(hidden_).first(tokens.size() * dim_);
    stage_.Embed(tokens, x);
    Sequence& s = sequences_[sequence];
    stage_.Forward(slot(sequence), s.pos, x);
    s.pos += static_cast<int64_t>(tokens.size());
    return x;
  }

  // Leader: samples the next token of `sequence` from the logits of its last
  // hidden state, reports it, and returns it, or -1 when the sequence stops.
  int32_t SampleNext(int sequence, std::span<const float> last_hidden) {
    Sequence& s = sequences_[sequence];
    int32_t token = -1;
    if (s.generated < options_.max_new_tokens) {
      TimedScope scope(timeline_, SpanKind::kCompute, "sample", sequence);
      const std::span<const float> logits = stage_.Logits(last_hidden);
      if (observer_ != nullptr) observer_->OnLogits(sequence, logits);
      std::copy(logits.begin(), logits.end(), logits_scratch_.begin());
      token = s.sampler.Sample(logits_scratch_);
      if (!first_token_) {
        first_token_ = Clock::now();
        report_.time_to_first_token_seconds = Seconds(start_, *first_token_);
      }
      if (token == kEosId || token == kBosId) token = -1;
    }
    if (token >= 0) {
      ++s.generated;
      ++report_.generated_tokens;
      report_.generated[sequence].push_back(token);
      if (observer_ != nullptr) observer_->OnToken(sequence, s.previous, token);
      s.previous = token;
      const bool context_full = s.pos >= stage_.config().max_position_embeddings;
      if (s.generated < options_.max_new_tokens && !context_full) return token;
    }
    if (observer_ != nullptr) observer_->OnSequenceDone(sequence);
    return -1;
  }

  EngineStatus RunAlone() {
    for (size_t sequence = 0; sequence < sequences_.size(); ++sequence) {
      const int id = static_cast<int>(sequence);
      const std::vector<int32_t>& prompt = *sequences_[sequence].prompt;
      std::span<float> x;
      for (size_t begin = 0; begin < prompt.size(); begin += stage_.max_positions_per_call()) {
        const size_t n = std::min<size_t>(stage_.max_positions_per_call(), prompt.size() - begin);
        x = EmbedAndForward(id, std::span<const int32_t>(prompt).subspan(begin, n));
      }
      for (int32_t token = SampleNext(id, x.last(dim_)); token >= 0; token = SampleNext(id, x.last(dim_))) {
        x = EmbedAndForward(id, std::span<const int32_t>(&token, 1));
      }
    }
    return {};
  }

  EngineStatus SendHidden(int to, int sequence, int64_t pos, std::span<const float> x) {
    TimedScope scope(timeline_, SpanKind::kSend, "send hidden", sequence);
    const int32_t header[3] = {sequence, static_cast<int32_t>(pos), static_cast<int32_t>(x.size() / dim_)};
    if (Status sent = group_.send_i32(to, kHeaderTag, header); !sent) return Failure("send header to", to, sent.error());
    if (!x.empty()) {
      if (Status sent = group_.send_f32(to, kHiddenTag, x); !sent) {
        return Failure("send hidden states to", to, sent.error());
      }
    }
    return {};
  }

  EngineResult<Header> ReceiveHeader(int from) {
    TimedScope scope(timeline_, SpanKind::kWait, "wait", -1);
    Result<std::vector<int32_t>> message = group_.recv_i32(from, kHeaderTag);
    if (!message) return Failure("receive header from", from, message.error());
    const std::vector<int32_t>& h = *message;
    if (h.size() != 3 || h[0] < 0 || h[0] >= static_cast<int>(sequences_.size()) ||
        (h[2] > 0 && h[1] != sequences_[h[0]].pos) || h[2] < 0 || h[2] > stage_.max_positions_per_call()) {
      return EngineError{"rank " + std::to_string(group_.rank()) + ": malformed header from rank " +
                         std::to_string(from) + " (" + std::to_string(h.size()) + " ints)"};
    }
    return Header{h[0], h[1], h[2]};
  }

  EngineResult<std::vector<float>> ReceiveHidden(int from, const Header& header) {
    TimedScope scope(timeline_, SpanKind::kRecv, "recv hidden", header.sequence);
    Result<std::vector<float>> x = group_.recv_f32(from, kHiddenTag);
    if (!x) return Failure("receive hidden states from", from, x.error());
    if (static_cast<int64_t>(x->size()) != header.n * dim_) {
      return EngineError{"rank " + std::to_string(group_.rank()) + ": hidden states from rank " +
                         std::to_string(from) + " hold " + std::to_string(x->size()) + " floats, expected " +
                         std::to_string(header.n * dim_)};
    }
    return std::move(*x);
  }

  EngineStatus RunFirstStage() {
    const int next = group_.rank() - 1;
    for (size_t sequence = 0; sequence < sequences_.size(); ++sequence) {
      const int id = static_cast<int>(sequence);
      const std::vector<int32_t>& prompt = *sequences_[sequence].prompt;
      for (size_t begin = 0; begin < prompt.size(); begin += stage_.max_positions_per_call()) {
        const size_t n = std::min<size_t>(stage_.max_positions_per_call(), prompt.size() - begin);
        std::span<float> x = EmbedAndForward(id, std::span<const int32_t>(prompt).subspan(begin, n));
        if (EngineStatus sent = SendHidden(next, id, static_cast<int64_t>(begin), x); !sent) return sent;
      }
    }
    for (size_t remaining = sequences_.size(); remaining > 0;) {
      Result<std::vector<int32_t>> message = [&] {
        TimedScope scope(timeline_, SpanKind::kWait, "wait token", -1);
        return group_.recv_i32(0, kTokenTag);
      }();
      if (!message) return Failure("receive token from", 0, message.error());
      if (message->size() != 2 || (*message)[0] < 0 || (*message)[0] >= static_cast<int>(sequences_.size()) ||
          (*message)[1] >= stage_.config().vocab_size) {
        return EngineError{"rank " + std::to_string(group_.rank()) + ": malformed token message from rank 0"};
      }
      const int sequence = (*message)[0];
      const int32_t token = (*message)[1];
      if (token < 0) {
        --remaining;
        if (EngineStatus sent = SendHidden(next, sequence, 0, {}); !sent) return sent;
        continue;
      }
      const int64_t pos = sequences_[sequence].pos;
      std::span<float> x = EmbedAndForward(sequence, std::span<const int32_t>(&token, 1));
      if (EngineStatus sent = SendHidden(next, sequence, pos, x); !sent) return sent;
    }
    return {};
  }

  EngineStatus RunMiddleStage() {
    const int previous = group_.rank() + 1;
    const int next = group_.rank() - 1;
    for (size_t remaining = sequences_.size(); remaining > 0;) {
      EngineResult<Header> header = ReceiveHeader(previous);
      if (!header) return header.error();
      if (header->n == 0) {
        --remaining;
        if (EngineStatus sent = SendHidden(next, header->sequence, 0, {}); !sent) return sent;
        continue;
      }
      EngineResult<std::vector<float>> x = ReceiveHidden(previous, *header);
      if (!x) return x.error();
      {
        TimedScope scope(timeline_, SpanKind::kCompute, "forward", header->sequence);
        stage_.Forward(slot(header->sequence), header->pos, *x);
        sequences_[header->sequence].pos += header->n;
      }
      if (EngineStatus sent = SendHidden(next, header->sequence, header->pos, *x); !sent) return sent;
    }
    return {};
  }

  EngineStatus RunLastStage() {
    const int previous = group_.rank() + 1;
    for (size_t remaining = sequences_.size(); remaining > 0;) {
      EngineResult<Header> header = ReceiveHeader(previous);
      if (!header) return header.error();
      if (header->n == 0) {
        --remaining;
        continue;
      }
      EngineResult<std::vector<float>> x = ReceiveHidden(previous, *header);
      if (!x) return x.error();
      Sequence& s = sequences_[header->sequence];
      {
        TimedScope scope(timeline_, SpanKind::kCompute, "forward", header->sequence);
        stage_.Forward(slot(header->sequence), header->pos, *x);
        s.pos += header->n;
      }
      if (s.pos < static_cast<int64_t>(s.prompt->size())) continue;
      const int32_t message[2] = {header->sequence,
                                  SampleNext(header->sequence, std::span<const float>(*x).last(dim_))};
      TimedScope scope(timeline_, SpanKind::kSend, "send token", header->sequence);
      if (Status sent = group_.send_i32(first_stage_rank(), kTokenTag, message); !sent) {
        return Failure("send token to", first_stage_rank(), sent.error());
      }
    }
    return {};
  }

  ProcessGroup& group_;
  TransformerStage& stage_;
  const GenerationOptions& options_;
  GenerationObserver* observer_;
  Timeline& timeline_;
  const int64_t dim_;
  std::vector<float> hidden_;          // (max_positions_per_call, dim)
  std::vector<float> logits_scratch_;  // (vocab)
  std::vector<Sequence> sequences_;
  GenerationReport report_;
  Clock::time_point start_;
  std::optional<Clock::time_point> first_token_;
};

}  // namespace

EngineStatus ValidatePrompts(const std::vector<std::vector<int32_t>>& prompts, const ModelConfig& config) {
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string which = "prompt " + std::to_string(i);
    if (prompts[i].empty()) return EngineError{which + " is empty"};
    if (static_cast<int64_t>(prompts[i].size()) > config.max_position_embeddings) {
      return EngineError{which + " has " + std::to_string(prompts[i].size()) +
                         " tokens, longer than the model's context of " +
                         std::to_string(config.max_position_embeddings)};
    }
    for (int32_t id : prompts[i]) {
      if (id < 0 || id >= config.vocab_size) {
        return EngineError{which + ": token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                           std::to_string(config.vocab_size) + ")"};
      }
    }
  }
  return {};
}

EngineResult<GenerationReport> Generate(ProcessGroup& group, TransformerStage& stage,
                                        const std::vector<std::vector<int32_t>>& prompts,
                                        const GenerationOptions& options, GenerationObserver* observer,
                                        Timeline& timeline) {
  if (EngineStatus valid = ValidatePrompts(prompts, stage.config()); !valid) return valid.error();
  CHECK(group.world_size() == 1 || stage.num_slots() >= static_cast<int>(prompts.size()))
      << "a pipelined stage needs a KV-cache slot per prompt";
  CHECK_EQ(stage.is_first(), group.rank() == group.world_size() - 1);
  CHECK_EQ(stage.is_last(), group.rank() == 0);
  PipelineRun run(group, stage, prompts, options, observer, timeline);
  return run.Run();
}

}  // namespace inferno
