// Small generated models for the loader's tests: a ModelConfig, deterministic
// weights for every tensor of it, and writers for each format.
//
// Thread-safety: pure functions; writers need distinct paths.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "loader/checkpoint.h"
#include "loader/shard_plan.h"
#include "model/llama_layout.h"
#include "model/model_config.h"

namespace inferno {

// dim 16, hidden 40, `layers` layers, 4 heads, 2 kv heads, vocab 24, seq 32.
ModelConfig TestConfig(int64_t layers = 3, bool tied = false);
// TestConfig(2) as a mixture of experts: `architecture` (MixtralForCausalLM,
// Qwen3MoeForCausalLM), `experts` experts of `expert_hidden` hidden units,
// `per_token` chosen per token.
ModelConfig TestMixtureConfig(const std::string& architecture, int64_t experts, int64_t per_token,
                              int64_t expert_hidden = 40);

// The value of element `i` of tensor `name` in every generated model: distinct
// across tensors and elements, exactly representable in BF16 and F16.
float TestWeight(const std::string& name, int64_t i);
// All of tensor `spec` (Hugging Face layout and order).
std::vector<float> TestWeights(const TensorSpec& spec);

// Expects (gtest) `checkpoint` to hold every tensor of its config with the
// TestWeights values.
void ExpectHoldsTestWeights(const Checkpoint& checkpoint);

// Expects (gtest) Checkpoint::Open(path) to fail with a one-line message, and
// returns that message ("" when it opened).
std::string ExpectOpenFails(const std::string& path);

// The values of `slice` of `original`'s tensor, cut out independently of the
// loader's slicing code.
std::vector<float> ExpectedSliceValues(const Checkpoint& original, const TensorSlice& slice);

// Expects (gtest) `rank_weights` to hold exactly `shard`'s slices, each
// bit-identical to ExpectedSliceValues of `original`.
void ExpectRankWeightsMatch(const Checkpoint& rank_weights, const Checkpoint& original,
                            const RankShard& shard);

// Writes `folder`/config.json and `folder`/model.safetensors (F32) holding
// every tensor of LlamaTensorSpecs(config).
Status WriteTestSafetensorsModel(const std::string& folder, const ModelConfig& config);

// Writes a llama2.c v0 file of `config` holding the same weights as the
// safetensors model, stored as llama2.c stores them (q/k rows in llama2.c's
// RoPE order, the legacy RoPE tables, wcls unless tied).
Status WriteTestLlama2cModel(const std::string& path, const ModelConfig& config);

// Writes a GGUF file of `config` (gguf_writer.h) holding the TestWeights
// values, matrices as `matrix_type`, with a vocabulary of "<unk>", "<s>",
// "</s>", then "t3", "t4", ...
Status WriteTestGgufModel(const std::string& path, const ModelConfig& config,
                          DType matrix_type = DType::kF32);

// Writes `bytes` to `path` (for hand-made bad files).
Status WriteBytes(const std::string& path, const std::string& bytes);

// The path of ../shared/models/<name> beside the source tree (or under
// $INFERNO_SHARED_MODELS), or "" when absent, as in a fresh clone. Tests that
// call it list ":test_models.h" in `data`: its runfile leads to the source tree.
std::string SharedModelPath(const std::string& name);

// $TEST_TMPDIR/<name>, created as a folder when `folder`.
std::string TestPath(const std::string& name, bool folder = false);

}  // namespace inferno
