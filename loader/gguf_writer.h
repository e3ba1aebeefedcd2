// Writes a Llama, Qwen2 or Qwen3 model as a GGUF file the way llama.cpp's
// converter (gguf-py) does: general.architecture "llama", "qwen2" or "qwen3"
// and its keys (gguf_llama.h), the embedded tokenizer (gguf_vocabulary.h),
// alignment 32, GGUF tensor names, q and k rows in Meta's interleaved RoPE
// order for llama (Hugging Face's order for the Qwen families), matrices
// in the types llama.cpp's quantizer would choose for the file type and
// norms in F32 (as llama.cpp keeps 1-D tensors), general.file_type and
// general.quantization_version as llama.cpp sets them.
// The file appears under `path` only once complete (AtomicFile).
//
// Thread-safety: pure function; concurrent calls must use distinct paths.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "loader/gguf_file_type.h"
#include "loader/gguf_vocabulary.h"
#include "loader/safetensors_writer.h"
#include "model/model_config.h"
#include "tensor/tensor_info.h"

namespace inferno {

// Fills `values` (sized to the tensor's elements) with the f32 values,
// row-major, of tensor `index` of WriteGgufLlama's `tensors`; an error ends
// the write (it should name the tensor and its source).
using ReadTensorF32 = std::function<Status(size_t index, std::span<float> values)>;

// Writes the tensors `tensors` describes (Hugging Face names and shapes,
// exactly those of LlamaTensorSpecs(config); their dtype is ignored) in the
// given order, with `vocabulary` and general.name = `name`, each in the
// type `file_type` gives it (loader/gguf_file_type.h: 1-D ones F32,
// matrices converted by ConvertFromF32 — F16/BF16 rounded to nearest even,
// block types quantized as llama.cpp's quantizers do). Values come from
// `read`, asked once per tensor in order, so one tensor at a time is held
// in f32. Fails on I/O errors naming the file, on a config GGUF cannot
// express (another architecture, biases beyond Qwen2's, RoPE scaling), on tensors that do
// not match the config, on `read`'s errors, and on values a block type
// cannot represent (NaN, infinity), naming the tensor.
Status WriteGgufLlama(const std::string& path, const ModelConfig& config,
                      const std::vector<TensorInfo>& tensors, const ReadTensorF32& read,
                      const GgufFileType& file_type, const GgufVocabulary& vocabulary,
                      const std::string& name);

// The same, for tensors already in memory (`tensors[i].data` is read for
// tensor i); also fails, naming the tensor, when a tensor's data does not
// hold its shape's elements.
Status WriteGgufLlama(const std::string& path, const ModelConfig& config,
                      const std::vector<NamedTensorF32>& tensors, const GgufFileType& file_type,
                      const GgufVocabulary& vocabulary, const std::string& name);

}  // namespace inferno
