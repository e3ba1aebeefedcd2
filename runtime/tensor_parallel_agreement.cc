#include "runtime/tensor_parallel_agreement.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include <glog/logging.h>

#include "runtime/pipeline_protocol.h"

namespace inferno {

TensorParallelAgreement::TensorParallelAgreement(TensorParallelGroup* tensor_parallel, const ShardPlan& plan,
                                                 int tp_index, int64_t vocab, bool leader, Timeline& timeline)
    : group_(tensor_parallel != nullptr ? &tensor_parallel->group() : nullptr),
      plan_(plan),
      ring_rows_(plan.TpClassifierRows(tp_index)),
      leader_(leader),
      timeline_(timeline) {
  if (group_ != nullptr) {
    // Every ring's rows, padded to the longest (index 0's), for all_gather.
    gathered_width_ = plan_.TpClassifierRows(0).size();
    padded_.resize(gathered_width_);
    logits_.resize(vocab);
  }
}

Result<StepDecisions> TensorParallelAgreement::Share(StepDecisions decisions) {
  if (group_ == nullptr) return decisions;
  TimedScope scope(timeline_, SpanKind::kWait, "agree on the step", -1);
  std::vector<std::vector<std::byte>> copies;
  if (leader_) copies.assign(static_cast<size_t>(plan_.tp), EncodeStepDecisions(decisions));
  Result<std::vector<std::byte>> bytes = group_->scatter(0, copies);
  if (!bytes) return bytes.error().Prefixed("tensor-parallel scatter of the step's decisions: ");
  if (leader_) return decisions;
  // The leader is rank 0, the tensor-parallel group's first.
  Result<StepDecisions> decoded = DecodeStepDecisions(*bytes);
  if (!decoded) return decoded.error().Prefixed("from rank 0: ");
  return decoded;
}

Result<int32_t> TensorParallelAgreement::GroupArgMax(int label, std::span<const float> ring_logits) {
  // This rank's best: its value, then its vocabulary id, 4 bytes each.
  std::array<std::byte, 2 * sizeof(float)> best;
  {
    TimedScope scope(timeline_, SpanKind::kCompute, "sample", label);
    const auto top = std::max_element(ring_logits.begin(), ring_logits.end());
    const int32_t id = static_cast<int32_t>(ring_rows_.begin + (top - ring_logits.begin()));
    std::memcpy(best.data(), &*top, sizeof(float));
    std::memcpy(best.data() + sizeof(float), &id, sizeof(int32_t));
  }
  TimedScope scope(timeline_, SpanKind::kWait, "gather best", label);
  std::vector<std::byte> all(static_cast<size_t>(plan_.tp) * best.size());
  if (Status gathered = group_->all_gather(std::span<const std::byte>(best), all); !gathered) {
    return gathered.error().Prefixed("tensor-parallel all_gather of the best logits: ");
  }
  // Ranks hold increasing ids, so the first largest value is the first id.
  float winner_value = 0;
  int32_t winner_id = 0;
  for (size_t offset = 0; offset < all.size(); offset += best.size()) {
    float value;
    std::memcpy(&value, all.data() + offset, sizeof(float));
    if (offset == 0 || value > winner_value) {
      winner_value = value;
      std::memcpy(&winner_id, all.data() + offset + sizeof(float), sizeof(int32_t));
    }
  }
  return winner_id;
}

Result<int32_t> TensorParallelAgreement::LeaderToken(int label, int32_t token) {
  TimedScope scope(timeline_, SpanKind::kWait, "leader's token", label);
  std::array<int32_t, 1> value = {token};
  // The leader is rank 0, the tensor-parallel group's first.
  if (Status sent = group_->broadcast(0, std::span<int32_t>(value)); !sent) {
    return sent.error().Prefixed("tensor-parallel broadcast of the leader's token: ");
  }
  return value[0];
}

Status TensorParallelAgreement::LeaderDraft(int label, std::vector<int32_t>& draft, int64_t max) {
  TimedScope scope(timeline_, SpanKind::kWait, "leader's draft", label);
  // The count, then the tokens, padded to the most there can be.
  std::vector<int32_t> message(static_cast<size_t>(max) + 1);
  if (leader_) {
    CHECK_LE(static_cast<int64_t>(draft.size()), max);
    message[0] = static_cast<int32_t>(draft.size());
    std::copy(draft.begin(), draft.end(), message.begin() + 1);
  }
  if (Status sent = group_->broadcast(0, std::span<int32_t>(message)); !sent) {
    return sent.error().Prefixed("tensor-parallel broadcast of the leader's draft: ");
  }
  if (message[0] < 0 || message[0] > max) {
    return Error::Corruption("the leader's draft of " + std::to_string(message[0]) + " tokens, at most " +
                             std::to_string(max) + " expected");
  }
  draft.assign(message.begin() + 1, message.begin() + 1 + message[0]);
  return {};
}

Result<std::span<float>> TensorParallelAgreement::GatherLogits(int label,
                                                               std::span<const float> ring_logits) {
  TimedScope scope(timeline_, SpanKind::kWait, "gather logits", label);
  std::copy(ring_logits.begin(), ring_logits.end(), padded_.begin());
  Result<std::vector<float>> all = group_->all_gather(padded_);
  if (!all) return all.error().Prefixed("tensor-parallel all_gather of the logits: ");
  for (int t = 0; t < plan_.tp; ++t) {
    const RowRange rows = plan_.TpClassifierRows(t);
    std::copy_n(all->data() + t * gathered_width_, rows.size(), logits_.data() + rows.begin);
  }
  return std::span<float>(logits_);
}

Result<std::vector<double>> TensorParallelAgreement::StageTimes() {
  const std::array<double, kTickValuesPerRank> own = {timeline_.seconds(SpanKind::kCompute),
                                                      timeline_.seconds(SpanKind::kWait)};
  if (group_ == nullptr) return std::vector<double>(own.begin(), own.end());
  Result<std::vector<std::vector<std::byte>>> gathered =
      group_->gather(0, std::as_bytes(std::span<const double>(own)));
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

}  // namespace inferno
