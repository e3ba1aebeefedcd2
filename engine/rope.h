// RoPE frequencies: the inverse frequency of each rotated pair of a head,
// as Hugging Face computes them, with the scalings of config.json's
// rope_scaling (linear; Llama 3.1's "llama3"; Phi-3's "longrope").
//
// Thread-safety: a pure function.
#pragma once

#include <vector>

#include "model/model_config.h"

namespace inferno {

// (head_dim / 2): pair i turns by position * result[i]. Without scaling,
// 1 / theta^(2i / head_dim) in f32 (as llama2.c). Linear divides every
// frequency by the factor. Llama 3 keeps the high frequencies (wavelength
// below original_max_position_embeddings / high_freq_factor), divides the
// low ones (wavelength above original_max_position_embeddings /
// low_freq_factor) by the factor, and blends the ones between. Longrope
// divides frequency i by short_factor[i], or by long_factor[i] when
// `context_length` (the positions a sequence may reach) passes
// original_max_position_embeddings: one choice for the whole context, as
// llama.cpp makes it from its context size. Hugging Face switches per
// forward call instead (long once a call's last position passes the
// original length), so the two agree whenever the prompt alone passes it,
// and differ for a sequence that crosses it during generation.
std::vector<float> RopeInverseFrequencies(const ModelConfig& config, int64_t context_length);

// What cos and sin are multiplied by: longrope's attention_factor, else 1.
float RopeAttentionFactor(const ModelConfig& config);

}  // namespace inferno
