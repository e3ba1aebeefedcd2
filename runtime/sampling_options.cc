#include "runtime/sampling_options.h"

#include <cmath>

namespace inferno {

bool ValidSamplingOptions(const SamplingOptions& o) {
  // Written so that NaN fails.
  return (o.temperature == 0.0f || (o.temperature >= kMinTemperature && std::isfinite(o.temperature))) &&
         o.top_k >= 0 && o.top_p > 0.0f && o.top_p <= 1.0f &&
         std::fabs(o.presence_penalty) <= kMaxPresenceFrequencyPenalty &&
         std::fabs(o.frequency_penalty) <= kMaxPresenceFrequencyPenalty && o.repetition_penalty > 0.0f &&
         o.repetition_penalty <= kMaxRepetitionPenalty && o.logprobs >= -1 && o.logprobs <= kMaxTopLogprobs;
}

}  // namespace inferno
