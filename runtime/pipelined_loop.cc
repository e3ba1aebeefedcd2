#include "runtime/pipelined_loop.h"

#include <algorithm>
#include <string>
#include <variant>

#include <glog/logging.h>

namespace inferno {

PipelinedLoop::PipelinedLoop(const ShardPlan& plan, PipelineRing& ring, Scheduler& scheduler,
                             StageWorker& worker, TensorParallelAgreement& agreement)
    : plan_(plan),
      ring_(ring),
      scheduler_(scheduler),
      worker_(worker),
      agreement_(agreement),
      stage_(worker.stage()),
      dim_(worker.dim()),
      ring_rows_(plan.TpClassifierRows(stage_.part().tp_index)),
      groups_(plan.pp, worker.max_group()),
      classify_(worker.max_classified() * (dim_ + ring_rows_.size())),
      rows_(static_cast<size_t>(worker.stage().num_slots())) {
  CHECK_GT(plan.pp, 1);
}

Status PipelinedLoop::Run() {
  while (true) {
    if (stage_.is_last()) {
      if (Status scheduled = Schedule(); !scheduled) return scheduled;
    }
    Result<PipelineRing::Received> received = ring_.Receive();
    if (!received) return received.error();
    if (Status handled = Handle(received->step); !handled) return handled;
    if (ended_) return {};
  }
}

Status PipelinedLoop::Schedule() {
  Result<StepDecisions> decisions = scheduler_.Decide();
  if (!decisions) return decisions.error();
  Status admitted =
      scheduler_.Admit(*decisions, [&](int slot, std::span<const int32_t> prompt, const PrefixPlan& plan) {
        if (!plan.empty()) {
          plan_ids_.assign(plan.restore.begin(), plan.restore.end());
          plan_ids_.insert(plan_ids_.end(), plan.save.begin(), plan.save.end());
          const PrefixMessage header{slot, static_cast<int32_t>(plan.restore.size()),
                                     static_cast<int32_t>(plan.save.size())};
          if (Status sent = ring_.Send("send prefix", header, std::as_bytes(std::span(plan_ids_))); !sent) {
            return sent;
          }
        }
        const AdmitMessage header{slot, static_cast<int32_t>(prompt.size()),
                                  static_cast<int32_t>(plan.first_position())};
        Status sent = ring_.Send("send admit", header, std::as_bytes(prompt));
        if (sent) groups_.Departed();
        return sent;
      });
  if (!admitted) return admitted;
  const bool idle = scheduler_.running() == 0;
  if (tick_on_the_way_ || !(idle || decisions->tick_due)) return {};
  const bool end = idle && decisions->exhausted;
  const ControlMessage control{0, end ? ControlMessage::kEnd : ControlMessage::kTick};
  if (Status sent = ring_.Send(end ? "send end" : "send tick", control, {}); !sent) return sent;
  tick_on_the_way_ = true;
  scheduler_.RestartTickClock();
  return {};
}

Status PipelinedLoop::Handle(const std::vector<PipelineMessage>& step) {
  switch (KindOf(step[0].header)) {
    case MessageKind::kHidden:
      return HandleHidden(step);
    case MessageKind::kToken:
      return HandleTokens(step);
    case MessageKind::kClassify:
      return HandleClassify(step);
    case MessageKind::kAdmit:
      return HandleAdmit(std::get<AdmitMessage>(step[0].header), step[0]);
    case MessageKind::kControl:
      return HandleControl(std::get<ControlMessage>(step[0].header), step[0]);
    case MessageKind::kPrefix:
      return HandlePrefix(std::get<PrefixMessage>(step[0].header), step[0]);
    case MessageKind::kGroup:
      break;
  }
  LOG(FATAL) << "a group is decoded into its members";
}

Status PipelinedLoop::HandleControl(const ControlMessage& header, const PipelineMessage& message) {
  if (header.signal == ControlMessage::kEnd && message.payload.size() == 0) {
    ended_ = true;
    return stage_.is_last() ? Status{} : ring_.Send("send end", header, {});
  }
  if (header.signal != ControlMessage::kTick) {
    return ring_.Malformed("control signal " + std::to_string(header.signal) + " with " +
                           std::to_string(message.payload.size()) + " bytes");
  }
  // Ring 0: (stages before this one, tp, kTickValuesPerRank); other rings: empty.
  const bool carries_times = stage_.part().tp_index == 0;
  tick_times_.resize(carries_times ? static_cast<size_t>(stage_.part().stage * plan_.tp) * kTickValuesPerRank
                                   : 0);
  Status taken = ring_.TakePayload("recv tick", message, std::span<double>(tick_times_));
  if (!taken) return taken;
  // Every rank of the stage has its ring's tick at this step (the leader's
  // decisions send them at the same step, and the rings' messages come in
  // the same order), so they gather their times here.
  Result<std::vector<double>> own = agreement_.StageTimes();
  if (!own) return own.error();
  tick_times_.insert(tick_times_.end(), own->begin(), own->end());
  if (stage_.is_last()) {
    tick_on_the_way_ = false;
    scheduler_.ReportRankTimes(tick_times_);
    return {};
  }
  return ring_.Send("send tick", header, std::as_bytes(std::span<const double>(tick_times_)));
}

Status PipelinedLoop::HandlePrefix(const PrefixMessage& header, const PipelineMessage& message) {
  if (header.restored < 0 || header.stored < 0 || header.restored + header.stored < 1 ||
      (stage_.is_last() && !scheduler_.slot(header.sequence).busy)) {
    return ring_.Malformed("prefix plan of sequence " + std::to_string(header.sequence) + " restoring " +
                           std::to_string(header.restored) + " blocks, storing " +
                           std::to_string(header.stored));
  }
  plan_ids_.resize(static_cast<size_t>(header.restored + header.stored));
  if (Status taken = ring_.TakePayload("recv prefix", message, std::span<int32_t>(plan_ids_)); !taken) {
    return taken;
  }
  const auto middle = plan_ids_.begin() + header.restored;
  const PrefixPlan plan{std::vector<int32_t>(plan_ids_.begin(), middle),
                        std::vector<int32_t>(middle, plan_ids_.end())};
  if (Status started = worker_.Start(header.sequence, plan); !started) return started;
  return stage_.is_last() ? Status{} : ring_.Send("send prefix", header, std::as_bytes(std::span(plan_ids_)));
}

Status PipelinedLoop::HandleAdmit(const AdmitMessage& header, const PipelineMessage& message) {
  // A sequence run from `first` > 0 was started by its prefix plan, just before.
  if (!stage_.is_first() || header.n < 1 || header.n > stage_.context_length() || header.first < 0 ||
      header.first >= header.n || (header.first > 0 && worker_.position(header.sequence) != header.first)) {
    return ring_.Malformed("admit of sequence " + std::to_string(header.sequence) + " with " +
                           std::to_string(header.n) + " tokens from position " +
                           std::to_string(header.first));
  }
  if (header.first == 0) worker_.Restart(header.sequence);
  prompt_.resize(static_cast<size_t>(header.n));
  if (Status taken = ring_.TakePayload("recv admit", message, std::span<int32_t>(prompt_)); !taken) {
    return taken;
  }
  for (int32_t id : prompt_) {
    if (id < 0 || id >= stage_.config().vocab_size) {
      return ring_.Malformed("admit of token " + std::to_string(id));
    }
  }
  return worker_.Prefill(header.sequence, prompt_, [&](int64_t begin, std::span<const float> x) {
    return ring_.Send(
        "send hidden",
        HiddenMessage{header.sequence, static_cast<int32_t>(begin), static_cast<int32_t>(x.size() / dim_)},
        std::as_bytes(x));
  });
}

Status PipelinedLoop::HandleTokens(const std::vector<PipelineMessage>& step) {
  tokens_.clear();
  batch_.clear();
  for (const PipelineMessage& message : step) {
    const TokenMessage& header = std::get<TokenMessage>(message.header);
    // A draft (i32 ids) comes alone; the token runs where the last stage
    // says, behind the positions of a draft it did not keep.
    const int64_t drafted = static_cast<int64_t>(message.payload_floats());
    const int64_t position = worker_.position(header.sequence);
    const bool cut_back = header.pos < position;
    if (!stage_.is_first() || header.token < 0 || header.token >= stage_.config().vocab_size ||
        header.pos < 1 || header.pos > position || (cut_back && !scheduler_.speculating()) ||
        (drafted > 0 && (!scheduler_.speculating() || step.size() != 1)) ||
        1 + drafted > worker_.max_classified() || header.pos + 1 + drafted > stage_.context_length()) {
      return ring_.Malformed("token " + std::to_string(header.token) + " at position " +
                             std::to_string(header.pos) + " with " + std::to_string(drafted) +
                             " drafted tokens");
    }
    if (cut_back) worker_.CutBack(header.sequence, header.pos);
    const size_t at = tokens_.size();
    tokens_.push_back(header.token);
    tokens_.resize(at + 1 + static_cast<size_t>(drafted));
    if (Status taken = ring_.TakePayload("recv token", message, std::span<int32_t>(tokens_).subspan(at + 1));
        !taken) {
      return taken;
    }
    for (size_t i = at + 1; i < tokens_.size(); ++i) {
      if (tokens_[i] < 0 || tokens_[i] >= stage_.config().vocab_size) {
        return ring_.Malformed("drafted token " + std::to_string(tokens_[i]));
      }
    }
    batch_.push_back(SlotPositions{header.sequence, header.pos, 1 + drafted});
  }
  Result<std::span<float>> x = worker_.EmbedAndForward(tokens_, batch_);
  if (!x) return x.error();
  headers_.clear();
  for (const SlotPositions& part : batch_) {
    headers_.push_back(
        HiddenMessage{part.slot, static_cast<int32_t>(part.pos), static_cast<int32_t>(part.n)});
  }
  return ring_.SendStep("send hidden", headers_, std::as_bytes(*x));
}

Status PipelinedLoop::HandleHidden(const std::vector<PipelineMessage>& step) {
  batch_.clear();
  int64_t rows = 0;
  for (const PipelineMessage& message : step) {
    const HiddenMessage& header = std::get<HiddenMessage>(message.header);
    if (header.pos == 0) worker_.Restart(header.sequence);
    // Behind where the slot is: a draft not kept (the first stage checked it).
    if (scheduler_.speculating() && header.pos > 0 && header.pos < worker_.position(header.sequence)) {
      worker_.CutBack(header.sequence, header.pos);
    }
    const int64_t pos = worker_.position(header.sequence);
    if (stage_.is_first() || header.pos != pos || header.n < 1 ||
        header.n > stage_.max_positions_per_call() - rows || pos + header.n > stage_.context_length() ||
        (stage_.is_last() && !scheduler_.slot(header.sequence).busy)) {
      return ring_.Malformed("hidden states of sequence " + std::to_string(header.sequence) +
                             " at position " + std::to_string(header.pos) + ", " + std::to_string(header.n) +
                             " positions");
    }
    const std::span<float> x = worker_.hidden(rows + header.n).subspan(rows * dim_);
    if (Status taken = ring_.TakePayload("recv hidden", message, x); !taken) return taken;
    batch_.push_back(SlotPositions{header.sequence, header.pos, header.n});
    rows += header.n;
  }
  const std::span<float> x = worker_.hidden(rows);
  if (Status done = worker_.Forward(batch_, x); !done) return done;
  if (stage_.is_last()) return StartClassifier(x);
  headers_.clear();
  for (const PipelineMessage& message : step) headers_.push_back(message.header);
  return ring_.SendStep("send hidden", headers_, std::as_bytes(x));
}

Status PipelinedLoop::StartClassifier(std::span<float> x) {
  // The last position of each sequence whose prompt is in — every position
  // of a decode step with a draft — moved to the front of x, and its slot.
  at_classifier_.clear();
  classifier_rows_.clear();
  int64_t row = 0;
  int64_t kept = 0;
  for (const SlotPositions& part : batch_) {
    row += part.n;
    if (worker_.position(part.slot) < scheduler_.slot(part.slot).prompt_length) continue;
    const bool drafted = part.pos >= scheduler_.slot(part.slot).prompt_length;
    const int64_t rows = drafted ? part.n : 1;
    if (row - rows != kept) std::copy_n(x.data() + (row - rows) * dim_, rows * dim_, x.data() + kept * dim_);
    at_classifier_.push_back(part.slot);
    classifier_rows_.push_back(rows);
    rows_[part.slot] = rows;
    kept += rows;
  }
  if (at_classifier_.empty()) return {};  // a prompt chunk before the last
  const std::span<const int> classified =
      scheduler_.NormForClassifier(at_classifier_, x.first(kept * dim_), classify_, classifier_rows_);
  if (classified.empty()) {
    groups_.Returned();
    return SendTokens();
  }
  headers_.clear();
  for (int slot : classified) {
    for (int64_t r = 0; r < rows_[slot]; ++r) headers_.push_back(ClassifyMessage{slot, 0});
  }
  return ring_.SendStep("send classify", headers_,
                        std::as_bytes(std::span<const float>(classify_).first(headers_.size() * dim_)));
}

Status PipelinedLoop::HandleClassify(const std::vector<PipelineMessage>& step) {
  // Rows relative to the ring's first.
  const RowRange rows{stage_.classifier_rows().begin - ring_rows_.begin,
                      stage_.classifier_rows().end - ring_rows_.begin};
  // classify_ (n, stride): each message's payload, then this rank's logits.
  const int64_t stride = dim_ + rows.end;
  const int64_t n = static_cast<int64_t>(step.size());
  const std::span<float> normed = worker_.normed(n);
  for (int64_t i = 0; i < n; ++i) {
    const ClassifyMessage& header = std::get<ClassifyMessage>(step[i].header);
    if (header.rows != rows.begin || (stage_.is_last() && !scheduler_.slot(header.sequence).busy)) {
      return ring_.Malformed("logits of " + std::to_string(header.rows) + " rows, expected " +
                             std::to_string(rows.begin));
    }
    const std::span<float> row = std::span<float>(classify_).subspan(i * stride, stride);
    if (Status taken = ring_.TakePayload("recv classify", step[i], row.first(dim_ + rows.begin)); !taken) {
      return taken;
    }
    std::copy_n(row.data(), dim_, normed.data() + i * dim_);
  }
  const std::span<const float> own =
      worker_.ClassifyOwnRows(n, StepLabel(step.size(), SequenceOf(step[0].header)));
  for (int64_t i = 0; i < n; ++i) {
    std::copy_n(own.data() + i * rows.size(), rows.size(), classify_.data() + i * stride + dim_ + rows.begin);
  }
  if (!stage_.is_last()) {
    headers_.clear();
    for (const PipelineMessage& message : step) {
      headers_.push_back(ClassifyMessage{SequenceOf(message.header), static_cast<int32_t>(rows.end)});
    }
    return ring_.SendStep("send classify", headers_,
                          std::as_bytes(std::span<const float>(classify_).first(n * stride)));
  }
  scheduler_.CountSamplingStep();
  groups_.Returned();
  for (int64_t i = 0; i < n;) {
    // A sequence's rows: its next token's, then its draft's (one_stage_loop.h).
    const int slot = SequenceOf(step[i].header);
    int64_t positions = 1;
    while (i + positions < n && SequenceOf(step[i + positions].header) == slot) ++positions;
    const int64_t draft = static_cast<int64_t>(scheduler_.slot(slot).draft.size());
    if (positions > 1 && draft != positions - 1) {
      return ring_.Malformed("logits of " + std::to_string(positions) + " positions of sequence " +
                             std::to_string(slot) + ", whose draft has " + std::to_string(draft));
    }
    const Result<int32_t> sampled = scheduler_.SampleDrafted(slot, positions, [&](int64_t j) {
      return std::span<float>(classify_).subspan((i + j) * stride + dim_, ring_rows_.size());
    });
    if (!sampled) return sampled.error();
    const int32_t token = *sampled;
    i += positions;
    if (token < 0) continue;
    const TokenMessage next{slot, token, static_cast<int32_t>(worker_.position(slot))};
    const Result<std::span<const int32_t>> next_draft = scheduler_.Draft(slot, worker_.max_classified());
    if (!next_draft) return next_draft.error();
    if (next_draft->empty()) {
      groups_.Add(next);
      continue;
    }
    // A drafted step travels alone.
    if (Status sent = ring_.Send("send token", next, std::as_bytes(*next_draft)); !sent) return sent;
    groups_.Departed();
  }
  return SendTokens();
}

Status PipelinedLoop::SendTokens() {
  while (groups_.NextGroup(scheduler_.running(), headers_)) {
    if (Status sent = ring_.SendStep("send token", headers_, {}); !sent) return sent;
  }
  return {};
}

}  // namespace inferno
