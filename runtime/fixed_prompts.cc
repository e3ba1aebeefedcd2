#include "runtime/fixed_prompts.h"

namespace inferno {

FixedPrompts::FixedPrompts(const std::vector<std::vector<int32_t>>& prompts, int64_t max_new_tokens,
                           const SamplingOptions& sampling, GenerationObserver* next)
    : prompts_(prompts),
      max_new_tokens_(max_new_tokens),
      sampling_(sampling),
      next_(next),
      generated_(prompts.size()),
      ended_(prompts.size(), false),
      started_(prompts.size(), false) {}

std::optional<SequenceSpec> FixedPrompts::Next(std::chrono::steady_clock::time_point) {
  while (next_index_ < prompts_.size() && (started_[next_index_] || ended_[next_index_])) ++next_index_;
  if (next_index_ == prompts_.size()) return std::nullopt;
  const size_t index = next_index_++;
  started_[index] = true;
  const std::vector<int32_t>& generated = generated_[index];
  std::vector<int32_t> prompt = prompts_[index];
  prompt.insert(prompt.end(), generated.begin(), generated.end());
  return SequenceSpec{static_cast<int64_t>(index), std::move(prompt),
                      max_new_tokens_ - static_cast<int64_t>(generated.size()), sampling_};
}

bool FixedPrompts::Exhausted() {
  while (next_index_ < prompts_.size() && (started_[next_index_] || ended_[next_index_])) ++next_index_;
  return next_index_ == prompts_.size();
}

void FixedPrompts::OnLogits(int64_t id, std::span<const float> logits) {
  if (next_ != nullptr) next_->OnLogits(id, logits);
}

void FixedPrompts::OnToken(int64_t id, int32_t previous, int32_t token) {
  generated_[static_cast<size_t>(id)].push_back(token);
  if (next_ != nullptr) next_->OnToken(id, previous, token);
}

void FixedPrompts::OnLogprobs(int64_t id, const TokenLogprobs& logprobs) {
  if (next_ != nullptr) next_->OnLogprobs(id, logprobs);
}

void FixedPrompts::OnSequenceDone(int64_t id, FinishReason reason) {
  ended_[static_cast<size_t>(id)] = true;
  if (next_ != nullptr) next_->OnSequenceDone(id, reason);
}

int64_t FixedPrompts::Continue() {
  int64_t continued = 0;
  for (size_t index = 0; index < prompts_.size(); ++index) {
    started_[index] = false;
    if (!ended_[index]) ++continued;
  }
  next_index_ = 0;
  return continued;
}

}  // namespace inferno
