#include "loader/llama2c_format.h"

#include "base/byte_codec.h"

#include <cstring>

namespace inferno {

Result<Llama2cLayout> ParseLlama2cFile(std::span<const std::byte> file, const std::string& source) {
  if (file.size() < kLlama2cHeaderBytes) {
    return Error::Corruption(source + ": truncated: " + std::to_string(file.size()) +
                             " bytes, shorter than the " + std::to_string(kLlama2cHeaderBytes) +
                             "-byte llama2.c header");
  }
  int32_t header[7];
  for (int i = 0; i < 7; ++i) header[i] = LoadLittleEndian<int32_t>(file.subspan(4 * i));
  const char* names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  for (int i = 0; i < 7; ++i) {
    if (header[i] == 0 || (header[i] < 0 && i != 5)) {
      return Error::Corruption(source + ": llama2.c header field " + names[i] + " = " +
                               std::to_string(header[i]) + " is not positive");
    }
  }
  Llama2cLayout layout;
  ModelConfig& c = layout.config;
  c.hidden_size = header[0];
  c.intermediate_size = header[1];
  c.num_hidden_layers = header[2];
  c.num_attention_heads = header[3];
  c.num_key_value_heads = header[4];
  c.vocab_size = header[5] < 0 ? -static_cast<int64_t>(header[5]) : header[5];
  c.max_position_embeddings = header[6];
  c.rms_norm_eps = kLlama2cRmsNormEps;
  c.rope_theta = kLlama2cRopeTheta;
  c.tie_word_embeddings = header[5] > 0;
  c.eos_token_ids.assign(std::begin(kLlama2cStopIds), std::end(kLlama2cStopIds));
  if (Status s = c.Validate(source); !s) return s.error();

  // Sizes are products of at most three int32 values: 128 bits cannot
  // overflow. The file size is checked before any tensor is laid out.
  using Wide = unsigned __int128;
  auto elements = [](const TensorSpec& spec) {
    Wide n = 1;
    for (int64_t d : spec.shape) n *= static_cast<Wide>(d);
    return n;
  };
  const std::vector<TensorSpec> layer0 = LayerTensorSpecs(c, 0);
  Wide layer_elements = 0;
  for (const TensorSpec& spec : layer0) layer_elements += elements(spec);
  const Wide rope_table_elements = static_cast<Wide>(c.max_position_embeddings) * (c.head_dim() / 2);
  const Wide embedding_elements = elements(EmbeddingSpec(c));
  const Wide expected =
      kLlama2cHeaderBytes + sizeof(float) * (embedding_elements * (c.tie_word_embeddings ? 1 : 2) +
                                             layer_elements * c.num_hidden_layers +
                                             elements(FinalNormSpec(c)) + 2 * rope_table_elements);
  if (expected != static_cast<Wide>(file.size())) {
    const std::string expected_text = expected > static_cast<Wide>(UINT64_MAX)
                                          ? std::string("more than 2^64")
                                          : std::to_string(static_cast<uint64_t>(expected));
    return Error::Corruption(
        source + ": " + (expected > file.size() ? "truncated: " : "trailing bytes: ") + "file has " +
        std::to_string(file.size()) + " bytes but the llama2.c header (dim " + std::to_string(c.hidden_size) +
        ", hidden_dim " + std::to_string(c.intermediate_size) + ", n_layers " +
        std::to_string(c.num_hidden_layers) + ", vocab_size " + std::to_string(header[5]) + ", seq_len " +
        std::to_string(c.max_position_embeddings) + ") needs " + expected_text);
  }

  uint64_t offset = kLlama2cHeaderBytes;
  auto add = [&](TensorSpec spec, int64_t rope_heads) {
    const uint64_t bytes = static_cast<uint64_t>(elements(spec)) * sizeof(float);
    layout.tensors.push_back({std::move(spec), offset, rope_heads});
    offset += bytes;
  };
  add(EmbeddingSpec(c), 0);
  // The per-layer arrays in file order: (index into kLayerTensorSuffixes,
  // RoPE heads of its rows).
  const std::pair<int, int64_t> per_layer[] = {
      {0, 0}, {1, c.num_attention_heads}, {2, c.num_key_value_heads}, {3, 0}, {4, 0}, {5, 0}, {6, 0}, {8, 0},
      {7, 0},
  };
  for (const auto& [suffix, rope_heads] : per_layer) {
    for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
      add(TensorSpec{LayerTensorName(layer, kLayerTensorSuffixes[suffix]), layer0[suffix].shape}, rope_heads);
    }
  }
  add(FinalNormSpec(c), 0);
  offset += 2 * static_cast<uint64_t>(rope_table_elements) * sizeof(float);  // freq_cis_real, freq_cis_imag
  if (!c.tie_word_embeddings) add(LmHeadSpec(c), 0);
  layout.file_bytes = file.size();
  return layout;
}

}  // namespace inferno
