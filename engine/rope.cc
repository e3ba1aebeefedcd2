#include "engine/rope.h"

#include <cmath>
#include <numbers>

namespace inferno {

std::vector<float> RopeInverseFrequencies(const ModelConfig& config, int64_t context_length) {
  const int64_t head_dim = config.head_dim();
  const RopeScaling& scaling = config.rope_scaling;
  std::vector<float> inverse(static_cast<size_t>(head_dim / 2));
  const std::vector<float>& longrope_factors =
      context_length > scaling.original_max_position_embeddings ? scaling.long_factor : scaling.short_factor;
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float frequency =
        1.0f / std::pow(config.rope_theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
    switch (scaling.type) {
      case RopeScaling::Type::kNone:
        inverse[i] = frequency;
        break;
      case RopeScaling::Type::kLinear:
        inverse[i] = frequency / scaling.factor;
        break;
      case RopeScaling::Type::kLongRope:
        inverse[i] =
            1.0f / (longrope_factors[static_cast<size_t>(i)] *
                    std::pow(config.rope_theta, static_cast<float>(2 * i) / static_cast<float>(head_dim)));
        break;
      case RopeScaling::Type::kLlama3: {
        const float original = static_cast<float>(scaling.original_max_position_embeddings);
        const float wavelength = 2.0f * std::numbers::pi_v<float> / frequency;
        if (wavelength < original / scaling.high_freq_factor) {
          inverse[i] = frequency;
        } else if (wavelength > original / scaling.low_freq_factor) {
          inverse[i] = frequency / scaling.factor;
        } else {
          const float smooth = (original / wavelength - scaling.low_freq_factor) /
                               (scaling.high_freq_factor - scaling.low_freq_factor);
          inverse[i] = (1.0f - smooth) * frequency / scaling.factor + smooth * frequency;
        }
        break;
      }
    }
  }
  return inverse;
}

float RopeAttentionFactor(const ModelConfig& config) {
  return config.rope_scaling.type == RopeScaling::Type::kLongRope ? config.rope_scaling.attention_factor
                                                                  : 1.0f;
}

}  // namespace inferno
